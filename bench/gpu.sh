#!/usr/bin/env bash
# The `triton` benchmarks (pipeline: ours vs the original design; limit: the in-process floor) on
# a single-GPU machine with no network, from a copy of the working tree plus carried wheels.
#
#   bash bench/gpu.sh OUT_DIR        # full JSON in OUT_DIR/triton.json, short table printed last
#
# What it needs in the copied tree (both are git-ignored, so carry them):
#   - model_repository/stn/1/model.onnx and model_repository/lprnet/1/model.onnx
#     (`stream-worker models prepare` on any machine with torch and the checkpoints);
#   - the sample photos: ../shared/samples beside the tree (or LPR_WEIGHTS_DIR=<dir>/weights
#     with <dir>/samples holding car.jpg and cat.jpeg);
#   - .whl/: every wheel the benchmark imports, for this machine's Python, e.g. on a networked
#     machine with the same Python version (3.11 here):
#       pip download -d .whl --only-binary=:all: nvidia-pytriton==0.7.0 'numpy<2' \
#         'opencv-python-headless<4.12' onnxruntime-gpu 'tritonclient[grpc,http]' pydantic \
#         pydantic-settings typer orjson tenacity prometheus-client confluent-kafka
#     (onnxruntime-gpu's CUDA 12 wheels also want the nvidia-*-cu12 runtime wheels it lists,
#     unless the machine has CUDA and cuDNN installed; their lib folders go on LD_LIBRARY_PATH.)
#
# The GPU path and its limits: the nvidia-pytriton wheel's tritonserver has only the Python
# backend, so configs/gpu.pbtxt (native onnxruntime + TensorRT) cannot load here. Instead a copy
# of model_repository/ runs the CPU configs with stn and lprnet asking ONNX Runtime for
# CUDAExecutionProvider (their `onnx_providers` parameter); the Haar detector and JPEG decoding
# stay on the CPU, with DETECTORS plate_detector instances (default: half the cores, 2 to 8)
# and as many in-process limit threads. Without a usable CUDA provider everything runs on CPU:
# the preflight line says so and the report records the providers the limit actually used.
#
# Environment: PYTHON (default: python3.11, else python3), FRAMES (96), ROUNDS (2),
# DETECTORS, WORK (scratch folder, default: $TMPDIR/stream-worker-gpu-bench).
set -euo pipefail

OUT=${1:?usage: bash bench/gpu.sh OUT_DIR}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${WORK:-${TMPDIR:-/tmp}/stream-worker-gpu-bench}
FRAMES=${FRAMES:-96}
ROUNDS=${ROUNDS:-2}
CORES=$(nproc)
DEFAULT_DETECTORS=$(( CORES / 2 > 8 ? 8 : (CORES / 2 < 2 ? 2 : CORES / 2) ))
DETECTORS=${DETECTORS:-$DEFAULT_DETECTORS}
PROVIDERS="CUDAExecutionProvider,CPUExecutionProvider"
started=$(date +%s)

say() { printf '[gpu.sh %3ds] %s\n' "$(( $(date +%s) - started ))" "$*" >&2; }
die() { say "error: $*"; exit 1; }

PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3 || true)}
[[ -n "$PYTHON" && -x "$PYTHON" ]] || die "no python3.11/python3 found (set PYTHON)"
for artifact in stn lprnet; do
  [[ -f "$ROOT/model_repository/$artifact/1/model.onnx" ]] ||
    die "model_repository/$artifact/1/model.onnx missing: carry it (see the header of this script)"
done
export LPR_WEIGHTS_DIR=${LPR_WEIGHTS_DIR:-$ROOT/../shared/weights}
for photo in car.jpg cat.jpeg; do
  [[ -f "$LPR_WEIGHTS_DIR/../samples/$photo" ]] || die "sample photo $LPR_WEIGHTS_DIR/../samples/$photo missing"
done
compgen -G "$ROOT/.whl/*.whl" >/dev/null || die "no wheels in $ROOT/.whl (see the header of this script)"
mkdir -p "$OUT" "$WORK"
OUT=$(cd "$OUT" && pwd)

# 1. Wheels into a private virtual environment (no network: --no-index; every carried wheel, no
# resolver). A venv rather than a bare --target folder because LocalTriton finds the tritonserver
# binary in the running interpreter's site-packages, and the Triton stub takes its packages from
# the first python3 on PATH.
VENV="$WORK/venv"
"$PYTHON" -m pip --version >/dev/null 2>&1 || die "$PYTHON has no pip module to install the wheels with"
[[ -x "$VENV/bin/python3" ]] || "$PYTHON" -m venv --without-pip "$VENV"
SITE=$("$VENV/bin/python3" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
stamp="$VENV/.installed-from"
listing=$(cd "$ROOT/.whl" && ls -1 ./*.whl | sort)
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$listing" ]]; then
  say "installing $(wc -l <<<"$listing") wheels into $VENV"
  "$PYTHON" -m pip install --quiet --no-index --no-deps --disable-pip-version-check --upgrade \
    --target "$SITE" "$ROOT"/.whl/*.whl
  printf '%s' "$listing" >"$stamp"
fi

# 2. Environment: the venv first on PATH, the tree (stream_worker, bench) on PYTHONPATH, the CUDA
# runtime wheels' libraries (if carried) on LD_LIBRARY_PATH.
PY="$VENV/bin/python3"
export PATH="$VENV/bin:$PATH"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
nvidia_libs=$(find "$SITE/nvidia" -maxdepth 2 -type d -name lib 2>/dev/null | paste -sd: || true)
export LD_LIBRARY_PATH="${nvidia_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# 3. Preflight: can ONNX Runtime really run the networks on the GPU here?
say "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'nvidia-smi: no GPU visible')"
"$PY" - "$ROOT/model_repository/stn/1/model.onnx" <<'PYEOF' >&2 || true
import sys

import numpy as np
import onnxruntime as ort

session = ort.InferenceSession(sys.argv[1], providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
session.run(None, {"input": np.zeros((1, 3, 24, 94), np.float32)})
print(f"[gpu.sh] preflight: onnxruntime {ort.__version__} runs stn with {session.get_providers()}")
PYEOF

# 4. A copy of the model repository: stn/lprnet on CUDA, DETECTORS detector instances.
REPO="$WORK/model_repository"
rm -rf "$REPO"
cp -r "$ROOT/model_repository" "$REPO"
for model in stn lprnet; do
  printf '\nparameters: { key: "onnx_providers", value: { string_value: "%s" } }\n' "$PROVIDERS" \
    >>"$REPO/$model/config.pbtxt"
done
sed -i "s/instance_group \[ { count: [0-9]*, kind: KIND_CPU } \]/instance_group [ { count: $DETECTORS, kind: KIND_CPU } ]/" \
  "$REPO/plate_detector/config.pbtxt"
grep -q "count: $DETECTORS," "$REPO/plate_detector/config.pbtxt" || die "could not set the detector instance count"

# 5. The benchmarks, bounded so the whole script stays within 8 minutes.
say "running pipeline + limit: $FRAMES frames x $ROUNDS rounds, $DETECTORS detectors, providers $PROVIDERS"
timeout 330 "$PY" -m stream_worker bench triton --repository "$REPO" --frames "$FRAMES" --rounds "$ROUNDS" \
  --limit-workers "$DETECTORS" --providers "$PROVIDERS" --report "$OUT/triton.json" >"$OUT/triton.txt" 2>&1 ||
  { tail -40 "$OUT/triton.txt" >&2; die "the benchmark failed (full output: $OUT/triton.txt)"; }

# 6. The short table, last.
"$PY" - "$OUT/triton.json" <<'PYEOF'
import json
import sys

report = json.load(open(sys.argv[1]))
results, machine = report["results"], report["machine"]
print(f"machine: {machine['cpu_model']} x{machine['usable_cores']}, GPU: {', '.join(machine['gpus']) or 'none'}")
print(f"limit providers used: {results['limit']['settings']['limit']['onnx_providers_used']}")
print(f"{'system':<28}{'frames/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'CPU ms/frame':>14}")
for section in ("pipeline", "limit"):
    for name, system in results[section]["systems"].items():
        label = f"{section}:{name}"
        print(f"{label:<28}{system['frames_per_s']:>10}{system['p50_ms']:>10}{system['p99_ms']:>10}"
              f"{system['cpu_ms_per_frame']:>14}")
for key, value in report["summary"].items():
    print(f"{key}: {value}")
PYEOF
say "done; full report: $OUT/triton.json"
