#!/usr/bin/env bash
# The project's demo command (README "Quick start"): sets up .venv, then runs `stream-worker demo`
# (local Kafka broker + local Triton + one worker + simulated cameras, all stopped at the end).
# Arguments go to `stream-worker demo` (e.g. --cameras 6 --fps 2 --duration 30, or image paths).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/stream-worker demo "$@"
