"""The order in which the test files start: the longest first.

`scripts/test.sh` runs the suite on two processes, each file whole in one of them (`--dist
loadfile`), handing out the files in the collected order (`--no-loadscope-reorder`; pytest-xdist's
own order puts the files with the most tests first, which leaves the few-test integration files,
the longest, for the end, where one process can be left running a long file alone). With the
longest files handed out first, what is left at the end are short files that even out.

The seconds per file come from a full run's `--durations` report, checked in as `durations.json`
(a file missing from it counts as 0 s: after every file in it). Regenerate it after a full run of
`bash scripts/test.sh --durations=0 > run.log`:
`python tests/file_order.py run.log` (several logs: each test's mean).
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

import orjson

HINT = Path(__file__).with_name("durations.json")
REPO = Path(__file__).resolve().parent.parent

# One line of pytest's --durations report: "12.34s call     tests/x/test_y.py::test_z[param]".
REPORT_LINE = re.compile(r"^(\d+(?:\.\d+)?)s (setup|call|teardown)\s+(\S.*)$")


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def longest_files_first(nodeids: Sequence[str], seconds: Mapping[str, float]) -> list[int]:
    """Indexes into `nodeids`, reordered: whole files, the most seconds first; files of equal
    seconds (unknown ones: 0) and the tests within a file keep their collected order."""
    first_index: dict[str, int] = {}
    for index, nodeid in enumerate(nodeids):
        first_index.setdefault(file_of(nodeid), index)

    def key(index: int) -> tuple[float, int, int]:
        name = file_of(nodeids[index])
        return (-seconds.get(name, 0.0), first_index[name], index)

    return sorted(range(len(nodeids)), key=key)


def seconds_per_file(reports: Sequence[str]) -> dict[str, float]:
    """Each file's seconds (setup, call and teardown of its tests) from --durations reports; a test
    phase in several reports counts with its mean."""
    runs: dict[tuple[str, str], list[float]] = defaultdict(list)
    for report in reports:
        for line in report.splitlines():
            if match := REPORT_LINE.match(line.strip()):
                runs[(match[3], match[2])].append(float(match[1]))
    totals: dict[str, float] = defaultdict(float)
    for (nodeid, _phase), values in runs.items():
        totals[file_of(nodeid)] += sum(values) / len(values)
    return dict(totals)


def load_hint(path: Path = HINT) -> dict[str, float]:
    return orjson.loads(path.read_bytes()) if path.exists() else {}


def write_hint(totals: Mapping[str, float], path: Path = HINT) -> None:
    """Whole seconds, the longest first; files under a second, or gone since, are left out."""
    kept = sorted(
        ((name, round(s)) for name, s in totals.items() if s >= 1 and (REPO / name).is_file()),
        key=lambda pair: (-pair[1], pair[0]),
    )
    path.write_bytes(orjson.dumps(dict(kept), option=orjson.OPT_INDENT_2) + b"\n")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python tests/file_order.py RUN.LOG [RUN.LOG ...]  (pytest --durations reports)")
    found = seconds_per_file([Path(name).read_text(errors="replace") for name in sys.argv[1:]])
    if not found:
        sys.exit("no --durations report lines found")
    write_hint(found)
    print(f"{HINT}: {len(found)} files, {sum(found.values()):.0f} s in all")
