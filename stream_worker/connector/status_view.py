"""What `stream-worker cameras status` prints: the status records of the last `since_s` seconds
(cameras/status.py STATUS_WINDOW_S unless told; None: the whole topic), a table by camera id (or
one JSON object per line), a record its replica stopped renewing marked stale. The window keeps the
read as short after a week of history as after a minute.

Under a running `up` (`console`), the states come from its console's followed view
(status_console.py): the same records, without a Kafka client. When the console cannot give them,
a line on stderr says why and the topic is read."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import orjson

from stream_worker.cameras.status import (
    STATUS_INTERVAL_S,
    STATUS_WINDOW_S,
    CameraStatus,
    is_stale,
)
from stream_worker.contracts.running_up import RunningUp

OK, BROKER_FAILED = 0, 1
# The console answers from memory in milliseconds; past this it is stuck or gone: read the topic.
CONSOLE_TIMEOUT_S = 3.0

Echo = Callable[[str], None]


def print_status(
    bootstrap_servers: str,
    topic: str,
    config: Mapping[str, str],
    timeout_s: float,
    as_json: bool,
    out: Echo,
    err: Echo,
    since_s: float | None = STATUS_WINDOW_S,
    console: RunningUp | None = None,
) -> int:
    """Read the status topic's recent records (`since_s`; None: all), or ask `console` (the running
    `up` whose defaults these are) for them, and print them; the exit status."""
    if console is not None and since_s is not None:
        from stream_worker.connector.status_console import ConsoleUnavailable, read_from_console

        try:
            statuses = read_from_console(console, since_s, min(timeout_s, CONSOLE_TIMEOUT_S))
        except ConsoleUnavailable as why:
            err(f"note: {why}; reading the topic instead")
        else:
            for line in status_lines(statuses, as_json, time.time()):
                out(line)
            return OK
    from confluent_kafka import KafkaException

    from stream_worker.cameras.store import STATUSES
    from stream_worker.service.compacted import CompactedTopicError

    try:
        snapshot = STATUSES.read(bootstrap_servers, topic, config, timeout_s, since_s)
    except (CompactedTopicError, KafkaException) as error:
        err(f"error: {error}")
        return BROKER_FAILED
    for skipped in snapshot.skipped:
        err(f"warning: skipped a record that is not a camera status ({skipped})")
    if not snapshot.topic_exists:
        err(f"note: topic {topic!r} does not exist: no connector has reported yet")
    for line in status_lines(list(snapshot.values.values()), as_json, time.time()):
        out(line)
    return OK


def status_lines(statuses: list[CameraStatus], as_json: bool, now: float) -> list[str]:
    """The table (or JSON lines) of `cameras status`, by camera id."""
    statuses = sorted(statuses, key=lambda s: s.camera_id)
    if as_json:
        return [
            orjson.dumps({**s.__dict__, "stale": is_stale(s, STATUS_INTERVAL_S, now)}).decode()
            for s in statuses
        ]
    if not statuses:
        return ["no camera has a status yet"]
    header = ("CAMERA", "STATE", "FOR", "IN/S", "OUT/S", "PUBLISHED", "SHED", "DELAY", "DROPPED")
    rows = [(*header, "RECONNECTS", "LAST_FRAME", "REPLICA", "LAST_ERROR")]
    for s in statuses:
        state = s.state + (" (stale)" if is_stale(s, STATUS_INTERVAL_S, now) else "")
        rows.append(
            (
                s.camera_id,
                state,
                _ago(now - s.state_since),
                f"{s.decoded_fps:g}",
                out_rate(s),
                str(s.frames_published),
                "-" if s.frames_shed is None else str(s.frames_shed),
                "-" if s.delay_s is None else f"{s.delay_s:.1f}s",
                str(s.frames_dropped),
                str(s.reconnects),
                _ago(now - s.last_frame_at) if s.last_frame_at is not None else "-",
                s.replica,
                (s.last_error or "-") if s.state != "streaming" else "-",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1]
        for row in rows
    ]


def out_rate(status: CameraStatus) -> str:
    """Frames a second published, and of how many offered while the camera sheds ("4 of 10")."""
    offered = status.offered_fps
    if offered is not None and status.frames_shed and status.published_fps < offered * 0.95:
        return f"{status.published_fps:g} of {offered:g}"
    return f"{status.published_fps:g}"


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"
