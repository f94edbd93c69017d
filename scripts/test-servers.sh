#!/usr/bin/env bash
# Installs the servers the tests start and the demo does not need, from Debian (scripts/test.sh runs
# it): GStreamer's RTSP server (the camera tests' RTSP cameras, run by the system python3 with
# python3-gi: stream_worker/launchers/rtsp.py), PostgreSQL 15 (the history store's tests), Chromium
# with its WebDriver (the console's browser tests), Mosquitto (the notify service's MQTT tests) and,
# where an apt source has it, kubectl (tests/deploy render the manifests with its kustomize).
# Touches apt only when a package is missing, which needs root; when another apt or dpkg process
# holds its lock, waits for it (APT_LOCK_TIMEOUT_S, default 600) saying who holds it.
set -euo pipefail

APT_LOCKS=(/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock)
LOCK_REPORT_EVERY_S=30

# "PID (command) holds PATH" for each lock of $@ held now (fcntl locks, as apt and dpkg take them),
# read from /proc/locks; nothing when none is held.
apt_lock_holders() {
  local path key pid
  for path in "$@"; do
    [ -e "$path" ] || continue
    key=$(stat -c '%Hd %Ld %i' "$path" | { read -r major minor inode; printf '%02x:%02x:%s' "$major" "$minor" "$inode"; })
    # A holder's line: "N: POSIX ADVISORY WRITE PID MAJ:MIN:INODE START END"; waiters have "->".
    for pid in $(awk -v key="$key" '$2 != "->" && $6 == key { print $5 }' /proc/locks | sort -u); do
      echo "PID $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-80 || echo '?')) holds $path"
    done
  done
}

# Returns once no lock of $@ is held (default: apt's and dpkg's); fails after APT_LOCK_TIMEOUT_S.
wait_for_apt_locks() {
  local locks=("$@") timeout="${APT_LOCK_TIMEOUT_S:-600}" waited=0 holders
  [ ${#locks[@]} -gt 0 ] || locks=("${APT_LOCKS[@]}")
  while holders=$(apt_lock_holders "${locks[@]}") && [ -n "$holders" ]; do
    if [ "$waited" -ge "$timeout" ]; then
      echo "test-servers: another apt/dpkg process still holds its lock after ${timeout} s; giving up:" >&2
      echo "$holders" | sed 's/^/  /' >&2
      return 1
    fi
    if [ $((waited % LOCK_REPORT_EVERY_S)) -eq 0 ]; then
      echo "test-servers: waiting for another apt/dpkg process to finish (${waited} s of ${timeout} s):" >&2
      echo "$holders" | sed 's/^/  /' >&2
    fi
    sleep 1
    waited=$((waited + 1))
  done
}

# apt-get, quiet unless it fails; when the lock is taken again between wait_for_apt_locks and apt's
# own, apt waits too (DPkg::Lock::Timeout).
apt_get() {
  local log
  log=$(mktemp)
  if ! DEBIAN_FRONTEND=noninteractive apt-get -qq -o "DPkg::Lock::Timeout=${APT_LOCK_TIMEOUT_S:-600}" "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "test-servers: apt-get $1 failed (above)" >&2
    return 1
  fi
  rm -f "$log"
}

main() {
  local packages=(python3-gi gir1.2-gst-rtsp-server-1.0 gstreamer1.0-plugins-base gstreamer1.0-plugins-good
    gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav postgresql-15 chromium chromium-driver
    mosquitto)
  if ! command -v dpkg-query >/dev/null; then
    echo "test-servers: no dpkg here; install by hand: ${packages[*]} (tests needing one fail under CI=true)" >&2
    return 0
  fi
  if ! command -v kubectl >/dev/null && apt-cache show kubectl >/dev/null 2>&1; then
    packages+=(kubectl)
  fi
  local missing=() package
  for package in "${packages[@]}"; do
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null)" = installed ] || missing+=("$package")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  if [ "$(id -u)" != 0 ]; then
    echo "test-servers: the tests need Debian packages that only root can install:" >&2
    echo "  sudo apt-get install --no-install-recommends ${missing[*]}" >&2
    return 1
  fi
  echo "test-servers: installing ${missing[*]}" >&2
  wait_for_apt_locks
  apt_get update
  wait_for_apt_locks
  apt_get install -y --no-install-recommends "${missing[@]}"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  main "$@"
fi
