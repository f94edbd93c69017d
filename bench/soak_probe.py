"""What `bench soak` measures each interval, from outside `up` as a person or a scraper would see
it: console pages signed in as an admin, `cameras status`, the memory of each child, the data
directory's bytes, the services' Prometheus metrics, and the alerts and sightings on their topics."""

from __future__ import annotations

import http.cookiejar
import itertools
import os
import re
import resource
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from confluent_kafka import Message

from bench.soak_stack import REPO_ROOT
from stream_worker.contracts import PlateAlert, PlateSighting
from stream_worker.contracts.topics import ALERTS

# One page of each kind a person opens, and the API the Cameras page polls.
PAGES = {
    "cameras": "/cameras",
    "sightings": "/search",
    "watchlist": "/watchlist",
    "notifications": "/notifications",
    "camera_status_api": "/api/camera-status",
}
PAGE_TIMEOUT_S = 30.0
STATUS_TIMEOUT_S = 120.0
CLOSE_PAIR_S = 6.0  # two alerts of one camera and plate closer than this in capture time: one pass twice


def percentile(values: list[float], share: float) -> float | None:
    """Nearest-rank percentile (a handful of samples: no interpolation)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered) + 0.5) - 1))]


class Console:
    """A signed-in admin: the login form (session cookie, CSRF token), then page requests."""

    def __init__(self, base_url: str, user: str, password: str) -> None:
        self.base_url = base_url.rstrip("/")
        self._opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        form = self._opener.open(f"{self.base_url}/login", timeout=PAGE_TIMEOUT_S).read().decode()
        found = re.search(r'name="csrf_token" value="([^"]+)"', form)
        if not found:
            raise RuntimeError("the console's login form has no CSRF token")
        fields = {"username": user, "password": password, "csrf_token": found[1], "next": "/"}
        with self._opener.open(
            f"{self.base_url}/login", urllib.parse.urlencode(fields).encode(), PAGE_TIMEOUT_S
        ) as reply:
            if reply.url.rstrip("/") != self.base_url:
                raise RuntimeError(f"signing in to the console failed (landed on {reply.url})")

    def get(self, path: str) -> tuple[int, float]:
        """(HTTP status, seconds); status 0 when no answer came."""
        started = time.monotonic()
        try:
            with self._opener.open(f"{self.base_url}{path}", timeout=PAGE_TIMEOUT_S) as reply:
                reply.read()
                code = reply.status
        except urllib.error.HTTPError as error:
            code = error.code
        except (urllib.error.URLError, OSError):
            code = 0
        return code, time.monotonic() - started

    def pages(self, requests: int) -> dict[str, dict[str, Any]]:
        """Each page `requests` times: p50/p95 ms and the answers that were not 200."""
        figures = {}
        for name, path in PAGES.items():
            answers = [self.get(path) for _ in range(requests)]
            times = [seconds * 1000 for _, seconds in answers]
            figures[name] = {
                "p50_ms": round(percentile(times, 0.5) or 0.0, 1),
                "p95_ms": round(percentile(times, 0.95) or 0.0, 1),
                "not_200": sum(1 for code, _ in answers if code != 200),
                "not_200_codes": sorted({code for code, _ in answers if code != 200}),  # 0: no answer
            }
        return figures


def cameras_status(data_dir: Path) -> dict[str, Any]:
    """`stream-worker cameras status` as a person under `up --data-dir` runs it (no flag: up's
    console answers, else the topic is read and a note says why): wall seconds, CPU ms, exit code,
    and which answered ("console" or "topic")."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("STREAM_WORKER_")}
    env["STREAM_WORKER_UP"] = str(data_dir)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "stream_worker", "cameras", "status"],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=STATUS_TIMEOUT_S, check=False,
        )  # fmt: skip
        code, note = result.returncode, result.stderr.strip()[-300:]
    except subprocess.TimeoutExpired:
        code, note = None, "timed out"
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "seconds": round(time.monotonic() - started, 2),
        "cpu_ms": round(cpu_s * 1000),
        "exit": code,
        "via": "console" if code == 0 and not note else "topic",
        "note": note or None,
    }


def _process_table() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, RSS bytes) of every process now."""
    table = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()
            table[int(entry.name)] = (int(stat[1]), int(stat[21]) * page)
        except (OSError, IndexError, ValueError):
            continue
    return table


def _trees(status: dict[str, Any], up_pid: int, table: dict[int, tuple[int, int]]) -> dict[str, set[int]]:
    """The pids of each child of `up` (its pids and all their descendants), and `up` itself."""
    children_of: dict[int, list[int]] = defaultdict(list)
    for pid, (parent, _) in table.items():
        children_of[parent].append(pid)

    def tree(pid: int) -> set[int]:
        seen, stack = set(), [pid]
        while stack:
            current = stack.pop()
            if current in seen or current not in table:
                continue
            seen.add(current)
            stack += children_of[current]
        return seen

    found = {"up": {up_pid} & set(table)}
    for name, child in (status.get("children") or {}).items():
        found[name] = set().union(*(tree(pid) for pid in child.get("pids") or []))
    return found


def _pss_bytes(pid: int) -> int:
    """Proportional set size: a page shared by n processes counts 1/n in each."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


def memory_by_child(status: dict[str, Any], up_pid: int) -> tuple[dict[str, float], dict[str, float]]:
    """MiB of each child of `up` and of `up`: (RSS, PSS). RSS counts a shared page once per process
    mapping it, and once per mapping: Triton maps each Python-backend stub's shared-memory region
    again each time the region grows, so its RSS climbs with pages that exist once. PSS counts each
    page once in all."""
    table = _process_table()
    trees = _trees(status, up_pid, table)
    rss = {name: round(sum(table[pid][1] for pid in pids) / 2**20, 1) for name, pids in trees.items()}
    pss = {name: round(sum(_pss_bytes(pid) for pid in pids) / 2**20, 1) for name, pids in trees.items()}
    return rss, pss


def folder_bytes(path: Path) -> int:
    """Bytes allocated on disk under `path` (what `du` counts)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                continue
    return total


def scrape(urls: list[str]) -> dict[str, float]:
    """Every sample line of the services' /metrics pages: `name{labels}` -> value, added up across
    services when two expose the same series."""
    samples: dict[str, float] = defaultdict(float)
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=10) as reply:
                text = reply.read().decode(errors="replace")
        except (urllib.error.URLError, OSError):
            continue
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            series, _, value = line.rpartition(" ")
            try:
                samples[series] += float(value)
            except ValueError:
                continue
    return dict(samples)


def metric_names(status: dict[str, Any]) -> list[str]:
    return [
        child["metrics_url"] for child in (status.get("children") or {}).values() if child.get("metrics_url")
    ]


def lag_seconds(samples: dict[str, float]) -> float | None:
    """The largest series named like `*lag_seconds*` (a gauge); None when no service exposes one."""
    found = [value for series, value in samples.items() if "lag_seconds" in series.split("{")[0]]
    return round(max(found), 2) if found else None


def shed_total(samples: dict[str, float]) -> float | None:
    """All frames counted by counters with a `shed` word (`*_shed_*_total`; not "published");
    None when no service exposes one."""
    found = [
        value
        for series, value in samples.items()
        if "shed" in (name := series.split("{")[0]).split("_") and name.endswith("_total")
    ]
    return sum(found) if found else None


def published_total(samples: dict[str, float]) -> float | None:
    found = [value for series, value in samples.items() if "frames_published_total" in series.split("{")[0]]
    return sum(found) if found else None


class Topics:
    """The alerts and sightings of the watched plates, read off their topics by a side reader (no
    group joined, the services undisturbed), parsed with the contracts."""

    def __init__(self, plates: set[str]) -> None:
        self.plates = plates
        self.alerts: dict[str, PlateAlert] = {}  # by alert_id: a replayed alert is the same alert
        self.newest_sighting: dict[str, datetime] = {}  # camera -> newest last_seen of a watched plate
        self.invalid = 0
        self._lock = threading.Lock()

    def handle(self, message: Message, _arrived: float) -> None:
        value = message.value()
        if value is None:
            return
        try:
            if message.topic() == ALERTS.name:
                alert = PlateAlert.model_validate_json(value)
                if alert.plate in self.plates:
                    with self._lock:
                        self.alerts[alert.alert_id] = alert
            else:
                sighting = PlateSighting.model_validate_json(value)
                texts = {sighting.text, *(candidate.text for candidate in sighting.candidates)}
                if texts & self.plates:
                    with self._lock:
                        newest = self.newest_sighting.get(sighting.camera_id)
                        if newest is None or sighting.last_seen > newest:
                            self.newest_sighting[sighting.camera_id] = sighting.last_seen
        except ValueError:
            with self._lock:
                self.invalid += 1

    def alert_figures(self) -> dict[str, dict[str, int]]:
        """Per camera: alerts of the watched plates, pairs of one plate closer than CLOSE_PAIR_S in
        capture time, and how many of the alerts came from a sighting (not from the reads)."""
        with self._lock:
            alerts = list(self.alerts.values())
        by_key: dict[tuple[str, str], list[datetime]] = defaultdict(list)
        for alert in alerts:
            if alert.captured_at is not None:
                by_key[(alert.camera_id, alert.plate)].append(alert.captured_at)
        figures: dict[str, dict[str, int]] = defaultdict(
            lambda: {"alerts": 0, "close_pairs": 0, "origin_sighting": 0}
        )
        for alert in alerts:
            figures[alert.camera_id]["alerts"] += 1
            figures[alert.camera_id]["origin_sighting"] += alert.origin == "sighting"
        for (camera, _plate), times in by_key.items():
            times.sort()
            close = sum(1 for a, b in itertools.pairwise(times) if (b - a).total_seconds() < CLOSE_PAIR_S)
            figures[camera]["close_pairs"] += close
        return dict(figures)

    def sighting_age_s(self, now: datetime) -> dict[str, float]:
        with self._lock:
            return {
                camera: round((now - seen).total_seconds(), 1)
                for camera, seen in self.newest_sighting.items()
            }
