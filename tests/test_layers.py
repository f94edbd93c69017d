"""The layers of the package (pyproject.toml [tool.importlinter], docs/development.md "Layout") hold, and the
check that guards them fails on an import against them; the Triton model repository, which runs
inside Triton's Python backend, imports nothing of stream_worker."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=root, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("layers")
    for name in ("stream_worker", "bench"):
        shutil.copytree(REPO_ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / "pyproject.toml", root)
    return root


def test_the_layers_hold() -> None:
    result = _lint_imports(REPO_ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("module", "planted", "broken"),
    [
        # the bottom layer leaning on a service
        ("stream_worker/contracts/frames.py", "from stream_worker.sightings import voting", "Layers"),
        # one service importing another
        ("stream_worker/alerts/candidates.py", "from stream_worker.sightings import grouping", "Layers"),
        # a cycle inside one package
        ("stream_worker/cameras/records.py", "from stream_worker.cameras import store", "cycle"),
    ],
)
def test_an_import_against_the_layers_fails_the_check(
    tree_copy: Path, module: str, planted: str, broken: str
) -> None:
    path = tree_copy / module
    original = path.read_text()
    path.write_text(original + f"\n{planted}  # planted\n")
    try:
        result = _lint_imports(tree_copy)
    finally:
        path.write_text(original)
    assert result.returncode == 1, result.stdout
    assert "BROKEN" in result.stdout or "broken" in result.stdout
    assert broken in result.stdout.split("Broken contracts", 1)[-1]


def test_the_model_repository_imports_nothing_of_stream_worker() -> None:
    sources = sorted((REPO_ROOT / "model_repository").rglob("*.py"))
    assert sources
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text(), str(source))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not any(name.split(".")[0] == "stream_worker" for name in names), source
