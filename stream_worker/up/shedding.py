"""`up` says when a camera sheds frames: the workers cannot keep up with it, so the connector
publishes fewer of its frames (connector/shedding.py). Read from the connector's own counters
(its /metrics), once every `every_s`: said when a camera starts shedding, again at most once a
minute while it goes on, and when it stops."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable

SHED = "stream_worker_connector_camera_frames_shed_total"
OFFERED = "stream_worker_connector_camera_frames_offered_total"
REPEAT_S = 60.0


def camera_counters(text: str) -> dict[str, dict[str, float]]:
    """{metric: {camera: value}} of the shed and offered counters in a Prometheus text page."""
    found: dict[str, dict[str, float]] = {SHED: {}, OFFERED: {}}
    for line in text.splitlines():
        name, _, rest = line.partition("{")
        if name in found and rest.startswith('camera="'):
            camera, _, value = rest[len('camera="') :].partition('"} ')
            try:
                found[name][camera] = float(value)
            except ValueError:
                continue
    return found


class ShedWatch:
    """Compares each camera's counters with the last look (see the module); `say` gets a line."""

    def __init__(self, say: Callable[[str], None], every_s: float = 10.0) -> None:
        self.say = say
        self.every_s = every_s
        self._last: dict[str, dict[str, float]] | None = None
        self._looked_at = 0.0
        self._said_at: dict[str, float] = {}  # cameras shedding: when it was last said

    def look(self, metrics_port: int | None, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if metrics_port is None or now - self._looked_at < self.every_s:
            return
        self._looked_at = now
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=2) as answer:
                text = answer.read().decode(errors="replace")
        except OSError:
            return  # restarting: the supervisor says so
        self.compare(camera_counters(text), now)

    def compare(self, counters: dict[str, dict[str, float]], now: float) -> None:
        last, self._last = self._last, counters
        if last is None:
            return
        for camera, shed in counters[SHED].items():
            shed_now = shed - last[SHED].get(camera, shed)
            offered_now = counters[OFFERED].get(camera, 0.0) - last[OFFERED].get(camera, 0.0)
            if shed_now > 0:
                if now - self._said_at.get(camera, -REPEAT_S) >= REPEAT_S:
                    self._said_at[camera] = now
                    self.say(
                        f"warning: camera {camera} sheds frames: {shed_now:.0f} of {offered_now:.0f} "
                        "left out lately, the workers cannot keep up (see stream-worker cameras status)"
                    )
            elif self._said_at.pop(camera, None) is not None:
                self.say(f"camera {camera} no longer sheds frames")
