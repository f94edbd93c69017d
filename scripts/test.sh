#!/usr/bin/env bash
# The project's test command (README "Run the tests"; .ci/run runs exactly this).
# Sets up .venv, lints, then runs the whole suite against real local servers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
ruff check .
ruff format --check .
pytest --durations=15 "$@"
