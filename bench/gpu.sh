#!/usr/bin/env bash
# The `triton` benchmarks (pipeline: ours vs the original design; limit: the in-process floor) on
# a single-GPU machine with no network, from a copy of the working tree plus carried wheels.
#
#   bash bench/gpu.sh OUT_DIR        # full JSON in OUT_DIR/triton.json, short table printed last
#
# What it needs in the copied tree (all git-ignored, so carry them):
#   - model_repository/{plate_detector,stn,lprnet}/1/model.onnx (`stream-worker models prepare` on
#     any machine with torch, the checkpoints and the detector's ONNX file);
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
# backend, so configs/gpu.pbtxt (native onnxruntime + TensorRT) cannot load here. Instead the
# bench serves a copy of model_repository/ with the CPU configs and `--parameter
# MODEL.onnx_providers=CUDA...` for plate_detector, stn and lprnet: the Python backend's ONNX
# Runtime sessions (model_repository/lprnet/1/model.py reads that parameter) ask for the CUDA
# provider. The baseline's in-process detector reads the same parameter from the served copy, and
# the in-process limit gets the providers with --providers. JPEG decoding, letterboxing, NMS and
# the corner warp stay on the CPU; the limit runs LIMIT_WORKERS threads (default: half the cores,
# 2 to 8). Without a usable CUDA provider everything runs on CPU: the preflight line says so and
# the report records the providers the limit actually used.
#
# Environment: PYTHON (default: python3.11, else python3), FRAMES (96), ROUNDS (2),
# LIMIT_WORKERS, WORK (scratch folder, default: $TMPDIR/stream-worker-gpu-bench).
set -euo pipefail

OUT=${1:?usage: bash bench/gpu.sh OUT_DIR}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${WORK:-${TMPDIR:-/tmp}/stream-worker-gpu-bench}
FRAMES=${FRAMES:-96}
ROUNDS=${ROUNDS:-2}
CORES=$(nproc)
DEFAULT_WORKERS=$(( CORES / 2 > 8 ? 8 : (CORES / 2 < 2 ? 2 : CORES / 2) ))
LIMIT_WORKERS=${LIMIT_WORKERS:-$DEFAULT_WORKERS}
PROVIDERS="CUDAExecutionProvider,CPUExecutionProvider"
started=$(date +%s)

say() { printf '[gpu.sh %3ds] %s\n' "$(( $(date +%s) - started ))" "$*" >&2; }
die() { say "error: $*"; exit 1; }

PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3 || true)}
[[ -n "$PYTHON" && -x "$PYTHON" ]] || die "no python3.11/python3 found (set PYTHON)"
for artifact in plate_detector stn lprnet; do
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
"$PY" - "$ROOT/model_repository" <<'PYEOF' >&2 || true
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort

inputs = {
    # a 16:9 frame's canvas at scale 1.0 (plate_recognition's detector_margins: 640x512)
    "plate_detector": np.zeros((1, 512, 640, 3), np.uint8),
    "stn": np.zeros((1, 3, 24, 94), np.float32),
}
for model, tensor in inputs.items():
    path = Path(sys.argv[1]) / model / "1" / "model.onnx"
    session = ort.InferenceSession(str(path), providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    session.run(None, {session.get_inputs()[0].name: tensor})
    print(f"[gpu.sh] preflight: onnxruntime {ort.__version__} runs {model} with {session.get_providers()}")
PYEOF

# 4. Every network on CUDA, through the copy of the model repository the bench serves.
PARAMETERS=()
for model in plate_detector stn lprnet; do
  PARAMETERS+=(--parameter "$model.onnx_providers=$PROVIDERS")
done

# 5. The benchmarks, bounded so the whole script stays within 8 minutes. --allow-busy: on a fresh
# machine the wheel install and the preflight above have just raised the 1-minute load average
# past the bench's idle threshold, and device time is too scarce to wait or to lose the run; the
# report records the load before/after and says busy when it was.
say "running pipeline + limit: $FRAMES frames x $ROUNDS rounds, $LIMIT_WORKERS limit workers, providers $PROVIDERS"
timeout 330 "$PY" -m stream_worker bench triton --repository "$ROOT/model_repository" --frames "$FRAMES" \
  --rounds "$ROUNDS" --limit-workers "$LIMIT_WORKERS" --providers "$PROVIDERS" "${PARAMETERS[@]}" --allow-busy \
  --report "$OUT/triton.json" >"$OUT/triton.txt" 2>&1 ||
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
