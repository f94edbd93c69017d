# syntax=docker/dockerfile:1.7
# Triton serving the plate-recognition model repository with its GPU config variant. Build from the
# repository root, handing over the weights as the named build context `weights`:
#   docker build -f deploy/docker/triton.Dockerfile \
#     --build-context weights=/abs/path/to/weights -t stream-worker-triton:0.1.0 .
# The folder must hold stn.pth and lprnet.pth (MIT, EgShes/one_task_multiple_infras), the plate
# detector y5fu_640x_sim.onnx (Apache-2.0, szad670401/HyperLPR) and the recognizer of Latin-script
# plates cct_xs_v1_global.onnx (MIT, fast-plate-ocr); NOTICE and deploy/README.md say where they
# come from. They are verified against their pinned sha256 and turned into the model
# repository's ONNX files in a throwaway stage (STN/LPRNet exported with torch, the detector made
# batch-dynamic with onnx); only those artifacts reach the final image, and the weights never enter
# the git tree or the main build context.

# Placeholder, replaced by `--build-context weights=DIR`; left empty when that flag is missing.
FROM scratch AS weights


# Export stage: torch (CPU build) only lives here.
FROM python:3.11.11-slim-bookworm AS models
# PyTorch's CPU wheel index: the default Linux torch wheel is the CUDA build, several GB.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m pip install --index-url "${TORCH_INDEX_URL}" torch==2.13.0
COPY pyproject.toml NOTICE ./
COPY stream_worker ./stream_worker
# The project itself, with the versions its `export` extra pins (torch above satisfies it).
# hadolint ignore=DL3013
RUN python -m pip install ".[export]"
COPY model_repository /models
# The files stream_worker/nets/weights.py pins (tests/deploy checks that this list matches it).
RUN --mount=type=bind,from=weights,target=/weights \
    for name in stn.pth lprnet.pth y5fu_640x_sim.onnx cct_xs_v1_global.onnx; do \
      if [ ! -f "/weights/${name}" ]; then \
        echo "${name} not found: pass --build-context weights=/abs/path/to/weights, a folder holding" \
          "stn.pth, lprnet.pth, y5fu_640x_sim.onnx and cct_xs_v1_global.onnx" \
          "(deploy/README.md says where to get them)" >&2; \
        exit 1; \
      fi; \
    done \
 && stream-worker models prepare --weights-dir /weights --repository /models \
 && find /models -name __pycache__ -prune -exec rm -rf {} +


# 24.12 = Triton 2.53: Ubuntu 24.04 with Python 3.12, the oldest release whose Python takes today's
# onnxruntime wheels (onnxruntime publishes none for Python 3.10, 24.10's, after 1.23.2), with the
# same GPU and driver support as 24.10 (compute capability 6.0+; 25.02 drops Pascal and Volta).
FROM nvcr.io/nvidia/tritonserver:24.12-py3 AS runtime
# What the Python-backend models import: numpy, OpenCV and simplejpeg (plate_recognition, which decodes
# frames with libjpeg-turbo through simplejpeg and with OpenCV what TurboJPEG declines; haar_detector,
# whose cascade ships inside the opencv wheel) and onnxruntime (the CPU variants of plate_detector, stn,
# lprnet and global_ocr, which serve the default configs). numpy < 2: the Python backend stub returned
# empty tensors with numpy 2 (measured with 24.10's). The `gpu` configs run those four networks on
# Triton's native onnxruntime backend with TensorRT, so no onnxruntime-gpu is needed. Exact pins keep
# rebuilds reproducible.
# onnxruntime 1.32.0, not 1.20.1: the plate detector's FP32 graph costs 1.39-1.47x the CPU time
# under 1.20.1 and 1.35-1.44x under 1.23.2 (AMD EPYC Zen 4; 1.46x on an Intel Sapphire Rapids), STN
# and LPRNet 0.86-1.02x, outputs the same; deploy/README.md gives the measurement. The system Python is marked externally managed (PEP 668) on Ubuntu 24.04:
# this image is that Python's only user, hence PIP_BREAK_SYSTEM_PACKAGES.
ARG ONNXRUNTIME_VERSION=1.32.0
RUN PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir \
      numpy==1.26.4 \
      opencv-python-headless==4.11.0.86 \
      simplejpeg==1.9.0 \
      "onnxruntime==${ONNXRUNTIME_VERSION}"
COPY --from=models /models /models
COPY NOTICE /usr/share/doc/stream-worker/NOTICE
# The image's own unprivileged user (triton-server, UID 1000), by number for runAsNonRoot.
USER 1000:1000
EXPOSE 8000 8001 8002
# Ready = server up AND every model loaded; TensorRT builds its engines at first load (minutes).
HEALTHCHECK --interval=15s --timeout=5s --start-period=600s --retries=3 \
  CMD ["python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/v2/health/ready', timeout=4)"]
CMD ["tritonserver", "--model-repository=/models", "--model-config-name=gpu"]
