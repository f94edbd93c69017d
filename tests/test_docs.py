"""The docs site builds with `mkdocs build --strict` (a broken link or anchor fails it), has a page
per feature with the console's screenshots, and its reference pages are the ones the code writes
(`python -m stream_worker.docs_reference`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from stream_worker import docs_reference
from stream_worker.docs_reference import CLI_PAGE, CONFIGURATION_PAGE, SERVICES

REPO_ROOT = Path(__file__).resolve().parent.parent
FEATURE_PAGES = (
    "cameras",
    "sightings",
    "alerts",
    "visits",
    "notifications",
    "console",
    "regions",
    "deployment",
    "reliability",
    "performance",
    "development",
)
SCREENSHOTS = ("live.png", "search.png", "watchlist.png", "visits.png", "reports.png")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def test_every_feature_has_a_page(site: Path) -> None:
    for name in (*FEATURE_PAGES, "reference/configuration", "reference/cli"):
        assert (site / name / "index.html").is_file(), name
    assert (site / "index.html").is_file()


def test_the_console_page_shows_the_screenshots(site: Path) -> None:
    page = (site / "console" / "index.html").read_text()
    for name in SCREENSHOTS:
        assert f'src="{name}"' in page, name
        assert (site / "console" / name).is_file(), name


@pytest.fixture(scope="module")
def generated() -> dict[Path, str]:
    return docs_reference.pages()


@pytest.mark.parametrize("path", [CONFIGURATION_PAGE, CLI_PAGE], ids=lambda path: path.name)
def test_reference_pages_are_current(path: Path, generated: dict[Path, str]) -> None:
    assert path.read_text() == generated[path], (
        f"{path.relative_to(REPO_ROOT)} is stale: run python -m stream_worker.docs_reference"
    )


def test_the_references_cover_every_service_and_command() -> None:
    configuration = CONFIGURATION_PAGE.read_text()
    for _, model in SERVICES:
        assert f"`{model.model_config['cli_prog_name']}`" in configuration
        for name in model.model_fields:
            assert f"| `{name}` | `{model.env_var(name)}` |" in configuration
    assert "| `--replica-id` | the host name |" in configuration  # not this machine's name
    cli = CLI_PAGE.read_text()
    for command in ("run", "sightings", "alerts", "notify", "connect", "store run", "notify targets set"):
        assert f"## `stream-worker {command}`" in cli
        assert "Example" in cli.split(f"## `stream-worker {command}`", 1)[1].split("\n## ", 1)[0]


def test_the_reference_does_not_depend_on_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """A caller's settings, terminal and colours change nothing in the pages."""
    monkeypatch.setenv("STREAM_WORKER_BOOTSTRAP_SERVERS", "elsewhere:9092")
    monkeypatch.setenv("STREAM_WORKER_STORE_DATA_DIR", "/srv/elsewhere")
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("XDG_DATA_HOME", "/srv/data")
    pages = docs_reference.pages()
    assert pages[CONFIGURATION_PAGE] == CONFIGURATION_PAGE.read_text()
    assert pages[CLI_PAGE] == CLI_PAGE.read_text()
    assert str(REPO_ROOT) not in pages[CLI_PAGE]
