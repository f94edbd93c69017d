"""The README stays true and short: its two set-up commands (the test command must be exactly what
CI runs), its links to files in the repository and to every page of the docs site, and at most
200 lines; the command table of the docs lists every command."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import typer

from stream_worker.cli import app
from tests.conftest import REPO_ROOT

README = REPO_ROOT / "README.md"
COMMANDS_PAGE = REPO_ROOT / "docs" / "commands.md"
CI_RUN = REPO_ROOT / ".ci" / "run"
MAX_LINES = 200


def _readme() -> str:
    return README.read_text()


def _quick_start_commands() -> list[str]:
    """The command lines of the first shell block under '## Quick start', comments dropped."""
    section = _readme().split("## Quick start", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None, "no ```bash block under '## Quick start'"
    lines = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line]


def _ci_command() -> str:
    """What `.ci/run` runs, as one command line: its exported defaults, then the exec'd command
    (CI=true left out: it is what makes a run CI's, where a missing tool fails, not skips)."""
    assignments, command = [], None
    for line in CI_RUN.read_text().splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if words[0] == "export":
            name, _, value = words[1].partition("=")
            default = re.fullmatch(r"\$\{(\w+):-(.*)\}", value)
            if default and default.group(1) == name:
                value = default.group(2)
            if name != "CI":
                assignments.append(f"{name}={value}")
        elif words[0] == "exec":
            command = " ".join(words[1:])
    assert command is not None, f"{CI_RUN} has no exec line"
    return " ".join([*assignments, command])


def test_the_readme_is_short() -> None:
    assert len(_readme().splitlines()) <= MAX_LINES


def test_quick_start_has_exactly_the_demo_and_the_test_command() -> None:
    assert len(_quick_start_commands()) == 2, _quick_start_commands()


def test_readme_test_command_is_what_ci_runs() -> None:
    assert _ci_command() == "LPR_WEIGHTS_DIR=../shared/weights bash scripts/test.sh"
    assert _quick_start_commands()[1] == _ci_command()


def test_ci_says_it_is_ci() -> None:
    """Under CI=true a test that needs a missing tool or data set fails (tests/support.py)."""
    exports = [shlex.split(line, comments=True) for line in CI_RUN.read_text().splitlines()]
    assert ["export", "CI=true"] in exports


def test_readme_demo_command_is_scripts_demo_sh() -> None:
    demo = _quick_start_commands()[0]
    assert demo == "LPR_WEIGHTS_DIR=../shared/weights bash scripts/demo.sh"
    script = (REPO_ROOT / shlex.split(demo)[-1]).read_text()
    commands = [line for line in script.splitlines() if line and not line.startswith(("#", "set ", "cd "))]
    assert commands == ["bash scripts/setup.sh", 'exec .venv/bin/stream-worker demo "$@"']


def _leaf_commands(command: object, prefix: tuple[str, ...] = ()) -> list[str]:
    children = getattr(command, "commands", {})
    if not children:
        return [" ".join(prefix)]
    return [leaf for name, sub in children.items() for leaf in _leaf_commands(sub, (*prefix, name))]


def test_every_command_is_in_the_commands_table() -> None:
    commands = COMMANDS_PAGE.read_text()
    for leaf in _leaf_commands(typer.main.get_command(app)):
        assert f"| `stream-worker {leaf}" in commands, f"`stream-worker {leaf}` missing from {COMMANDS_PAGE}"


def test_local_links_resolve() -> None:
    targets = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", _readme())
    assert targets
    missing = [target for target in targets if not (REPO_ROOT / target).exists()]
    assert missing == []


def test_the_readme_points_at_every_page_of_the_docs() -> None:
    pages = {str(path.relative_to(REPO_ROOT)) for path in (REPO_ROOT / "docs").rglob("*.md")}
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)", _readme()))
    assert pages - linked == set()


def test_readme_has_the_sections_a_newcomer_looks_for() -> None:
    headings = set(re.findall(r"^## (.+)$", _readme(), re.M))
    for heading in ("Quick start", "One box: `stream-worker up`", "Where to read on", "Credits and licence"):
        assert heading in headings
    assert "```mermaid" in _readme()


def test_readme_does_not_point_at_a_missing_script() -> None:
    for script in set(re.findall(r"scripts/[\w.-]+\.sh", _readme())):
        assert Path(REPO_ROOT / script).is_file(), script
