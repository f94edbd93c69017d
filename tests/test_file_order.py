"""The suite's files start the longest first (tests/file_order.py), so that the test processes
of scripts/test.sh finish together: the order, the report it is drawn from, the checked-in hint."""

from __future__ import annotations

from pathlib import Path

import pytest
from file_order import HINT, file_of, load_hint, longest_files_first, seconds_per_file, write_hint

REPO = Path(__file__).resolve().parent.parent

NODEIDS = [
    "tests/a/test_unit.py::test_one",
    "tests/a/test_unit.py::test_two",
    "tests/b/test_short.py::test_x[1]",
    "tests/b/test_short.py::test_x[2]",
    "tests/c/test_new.py::test_y",
    "tests/d/test_long.py::test_z",
    "tests/d/test_long.py::Group::test_w",
]


def test_files_go_longest_first_whole_and_in_their_own_order() -> None:
    seconds = {"tests/b/test_short.py": 12.0, "tests/d/test_long.py": 250.0, "tests/gone.py": 999.0}
    order = [NODEIDS[index] for index in longest_files_first(NODEIDS, seconds)]
    assert order == [
        "tests/d/test_long.py::test_z",
        "tests/d/test_long.py::Group::test_w",
        "tests/b/test_short.py::test_x[1]",
        "tests/b/test_short.py::test_x[2]",
        "tests/a/test_unit.py::test_one",  # files not in the hint: after, as collected
        "tests/a/test_unit.py::test_two",
        "tests/c/test_new.py::test_y",
    ]


def test_without_a_hint_the_collected_order_stays() -> None:
    assert longest_files_first(NODEIDS, {}) == list(range(len(NODEIDS)))


REPORT = """
============================= slowest 60 durations =============================
144.15s call     tests/connector/test_connector_shedding.py::test_on_triton
77.11s setup    tests/bench/test_scenarios.py::test_report_records[x y]
2.00s teardown tests/bench/test_scenarios.py::test_report_records[x y]
54.80s call     tests/connector/test_connector_shedding.py::test_bound[never-shed]
(3 durations < 0.005s hidden.  Use -vv to show these durations.)
=========== 1 failed, 4480 passed, 2 warnings in 2184.09s (0:36:24) ============
"""


def test_a_durations_report_gives_each_files_seconds_and_several_give_each_tests_mean() -> None:
    assert seconds_per_file([REPORT]) == pytest.approx(
        {"tests/connector/test_connector_shedding.py": 198.95, "tests/bench/test_scenarios.py": 79.11}
    )
    second = "100.00s call     tests/connector/test_connector_shedding.py::test_on_triton\n"
    assert seconds_per_file([REPORT, second])["tests/connector/test_connector_shedding.py"] == pytest.approx(
        122.075 + 54.80
    )


def test_the_hint_is_written_longest_first_without_files_gone_or_under_a_second(tmp_path: Path) -> None:
    path = tmp_path / "durations.json"
    write_hint({"tests/test_file_order.py": 3.4, "tests/conftest.py": 40.6, "tests/gone.py": 90.0,
                "tests/test_readme.py": 0.4}, path)  # fmt: skip
    assert list(load_hint(path).items()) == [("tests/conftest.py", 41), ("tests/test_file_order.py", 3)]


def test_the_checked_in_hint_names_existing_test_files() -> None:
    hint = load_hint(HINT)
    assert len(hint) >= 20
    for name, seconds in hint.items():
        assert (REPO / name).is_file() and Path(name).name.startswith("test_"), name
        assert seconds >= 1, name


def test_this_session_runs_the_hints_files_longest_first(request: pytest.FixtureRequest) -> None:
    """The conftest hook's order, as this session collected it (the whole suite under CI)."""
    files = list(dict.fromkeys(file_of(item.nodeid) for item in request.session.items))
    hint = load_hint(HINT)
    known = [name for name in files if name in hint]
    assert files[: len(known)] == known  # every file of the hint before every other
    assert [hint[name] for name in known] == sorted((hint[name] for name in known), reverse=True)


def test_the_test_command_keeps_the_collected_order_of_the_files() -> None:
    """pytest-xdist's own order (the files with most tests first) would undo the hook's."""
    pytest_line = next(
        line for line in (REPO / "scripts" / "test.sh").read_text().splitlines() if line.startswith("pytest ")
    )
    assert "--dist loadfile" in pytest_line and "--no-loadscope-reorder" in pytest_line
