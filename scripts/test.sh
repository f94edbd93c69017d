#!/usr/bin/env bash
# The project's test command (README "Quick start"; .ci/run runs exactly this).
# Sets up .venv and the test servers from Debian, lints, then runs the whole suite against real
# local servers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/test-servers.sh
export PATH="$PWD/.venv/bin:$PATH"
ruff check .
ruff format --check .
# The layers and the absence of import cycles ([tool.importlinter] in pyproject.toml).
lint-imports --no-cache
# Two test processes (PYTEST_WORKERS): each file runs whole in one of them, so module fixtures
# start once; each process has its own broker and Triton. More would mostly add Tritons (~2 GB each).
# The files are handed out in the collected order, the longest first (tests/file_order.py).
pytest -n "${PYTEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder --durations=15 "$@"
