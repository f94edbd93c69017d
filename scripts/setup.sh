#!/usr/bin/env bash
# Creates (or refreshes) the project's virtual environment in .venv with everything the demo and
# the tests need: the package, the local servers (tritonserver, Tansu), the ONNX export tools.
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
  .venv/bin/python -m pip install --quiet -e '.[local,export,dev]'
  rm -f .venv/.installed-* && touch "$stamp"
fi
