# syntax=docker/dockerfile:1.7
# The stream worker image: Kafka frames -> Triton -> plate events. Build from the repository root:
#   docker build -f deploy/docker/worker.Dockerfile -t stream-worker:0.1.0 .
# (worker.Dockerfile.dockerignore, beside this file, keeps the context to what the wheel needs.)
#
# Two stages: the builder turns the source into a wheel and installs it into a virtual
# environment; the runtime stage copies only that environment, so no compiler, pip cache or source
# tree reaches the running image. Both stages share one base, so the venv's paths stay valid.

FROM python:3.11.11-slim-bookworm AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml NOTICE ./
COPY stream_worker ./stream_worker
RUN python -m pip wheel --no-deps --wheel-dir /wheels . \
 && python -m venv /opt/stream-worker \
 && /opt/stream-worker/bin/pip install /wheels/stream_worker-*.whl


FROM python:3.11.11-slim-bookworm AS runtime
# A fixed numeric UID: Kubernetes' runAsNonRoot can only verify a numeric USER.
RUN groupadd --system --gid 10001 stream-worker \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin stream-worker
COPY --from=builder /opt/stream-worker /opt/stream-worker
COPY NOTICE /usr/share/doc/stream-worker/NOTICE
ENV PATH=/opt/stream-worker/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    STREAM_WORKER_METRICS_PORT=9108
USER 10001:10001
EXPOSE 9108
# Liveness only (/healthz): readiness (/readyz) depends on Kafka and Triton, and an unhealthy mark
# must not restart a worker that is merely waiting for them.
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('STREAM_WORKER_METRICS_PORT', '9108'), timeout=2)"]
ENTRYPOINT ["stream-worker", "run"]
