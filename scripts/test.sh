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
# Three test processes (PYTEST_WORKERS): each file runs whole in one of them, so module fixtures
# start once; each process has its own broker and Triton (~2 GB). Most tests wait on servers, not on
# the CPU: on 2 cores the load stayed about 2 with three processes and the suite took 16.5 min
# (the whole CI 17.8 min); with two, the last CI took 27 min.
# The files are handed out in the collected order, the longest first (tests/file_order.py).
pytest -n "${PYTEST_WORKERS:-3}" --dist loadfile --no-loadscope-reorder --durations=15 "$@"
