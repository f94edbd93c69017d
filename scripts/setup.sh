#!/usr/bin/env bash
# Creates (or refreshes) the project's virtual environment in .venv with everything the demo and
# the tests need: the package, the local servers (tritonserver, Tansu), the ONNX export tools, the
# history store and console.
# Idempotent: a second run only checks that the environment is up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
# GStreamer's RTSP server, the camera the connector's tests and the demo read (Debian packages for
# the system python3, which stream_worker/launchers/rtsp.py runs it with). Installed only when one
# is missing, so a second run touches nothing; apt needs root (CI runs this as root).
# PostgreSQL (the history store's tests start a real server) and Chromium with its WebDriver (the
# console's browser tests), and Mosquitto (the MQTT broker of the notify service's tests), from
# Debian too.
gst_packages=(python3-gi gir1.2-gst-rtsp-server-1.0 gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav postgresql-15 chromium chromium-driver
  mosquitto)
# kubectl, whose kustomize renders the manifests tests/deploy check, where an apt source has it
# (Kubernetes's pkgs.k8s.io); where none has, those tests skip, or fail under CI (CI=true), saying so.
if ! command -v kubectl >/dev/null && apt-cache show kubectl >/dev/null 2>&1; then
  gst_packages+=(kubectl)
fi
if command -v dpkg-query >/dev/null; then
  missing=()
  for package in "${gst_packages[@]}"; do
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null)" = installed ] || missing+=("$package")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
      apt_log=$(mktemp)
      if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$apt_log" 2>&1; then
        cat "$apt_log" >&2
        rm -f "$apt_log"
        exit 1
      fi
      rm -f "$apt_log"
    else
      echo "setup: the camera tests need (as root): apt-get install ${missing[*]}" >&2
    fi
  fi
fi
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -f "$stamp" ]; then
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
  # torch==2.13.0 (CPU) is pinned in the `export` extra: an unpinned torch would pull a multi-GB CUDA build.
  .venv/bin/python -m pip install --quiet -e '.[local,export,dev,store]'
  rm -f .venv/.installed-* && touch "$stamp"
fi
