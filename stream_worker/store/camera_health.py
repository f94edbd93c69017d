"""The cameras' health history, from the connector's `camera-status` records: the connector
rewrites each camera's record every few seconds on a compacted topic that keeps an hour, so the
store keeps, per camera per hour, one row: the state of each minute's first record (by the
record's own `updated_at`), and the frames published and shed in the hour.

Those frames are the rises of the connector's counters (totals since its replica took the camera)
from one kept record to the next: from zero after a restart or another replica (the counter starts
again), nothing for a record older than the last one kept. A minute already recorded keeps what it
has, so a record read again after a crash, or a second record of the minute, changes nothing. A
row an hour keeps the report's reading small: a 31-day report of 50 cameras reads 37,200 rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, insert, select, update

from stream_worker.cameras.status import CameraStatus
from stream_worker.store.rows import utc
from stream_worker.store.schema import NAME, camera_health

UP = "streaming"  # connector/states.py CameraState.STREAMING: frames are coming
# One character a minute: connector/states.py's states ("." no record; "?" a state unknown here).
CODES = {
    "streaming": "S",
    "connecting": "C",
    "stalled": "T",
    "ended": "E",
    "unauthorized": "A",
    "not_video": "V",
    "unreachable": "U",
    "missing_credentials": "M",
    "error": "X",
    "stopped": "P",
}
STATES = {code: state for state, code in CODES.items()} | {"?": "unknown"}
NONE = "."
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC).timestamp()
LATEST = datetime(9000, 1, 1, tzinfo=UTC).timestamp()
MAX_COUNTER = 2**62  # a BIGINT on either database


def states_seen(minutes: str) -> str:
    """An hour's `minutes` as `streaming:55 stalled:3 unreachable:2`: each state seen with its
    minutes, most first."""
    seen: dict[str, int] = {}
    for code in set(minutes) - {NONE}:
        state = STATES.get(code, "unknown")
        seen[state] = seen.get(state, 0) + minutes.count(code)
    return " ".join(f"{state}:{n}" for state, n in sorted(seen.items(), key=lambda item: (-item[1], item[0])))


@dataclass(frozen=True, slots=True)
class Sample:
    """What the store keeps of one status record."""

    camera_id: str
    at: datetime
    state: str
    published: int
    shed: int | None
    replica: str

    @property
    def hour(self) -> datetime:
        return self.at.replace(minute=0, second=0, microsecond=0)


def sample(camera_id: str, status: CameraStatus) -> Sample:
    """The sample of one status record; ValueError (naming the field, not its value) when the
    store cannot keep it."""
    if not camera_id or len(camera_id) > NAME:
        raise ValueError(f"camera id: empty or longer than {NAME} characters")
    if len(status.replica) > NAME:
        raise ValueError(f"replica: longer than {NAME} characters")
    if not EARLIEST <= status.updated_at < LATEST:
        raise ValueError("updated_at: not a time between 2000 and 9000")
    counters = (status.frames_published, status.frames_shed or 0)
    if min(counters) < 0 or max(counters) > MAX_COUNTER:
        raise ValueError(f"frames_published or frames_shed: negative or over {MAX_COUNTER}")
    return Sample(
        camera_id,
        datetime.fromtimestamp(status.updated_at, UTC),
        status.state,
        status.frames_published,
        status.frames_shed,
        status.replica,
    )


def _rise(value: int | None, last: int | None, same_replica: bool) -> int:
    """How much a counter rose since the last record kept (none before it: nothing to count)."""
    if value is None or last is None:
        return 0
    if not same_replica or value < last:
        return value  # counted from zero: a restart or another replica
    return value - last


@dataclass(frozen=True, slots=True)
class _Counters:
    """Where a camera's counters stood at the last record counted."""

    published: int
    shed: int | None
    replica: str
    at: datetime


def _latest(connection: Connection, camera_id: str) -> _Counters | None:
    """The counters of the camera's latest row (by hour), None for a camera never kept."""
    health = camera_health.c
    found = connection.execute(
        select(health.last_published, health.last_shed, health.replica, health.updated_at)
        .where(health.camera_id == camera_id)
        .order_by(health.hour.desc())
        .limit(1)
    ).first()
    return _Counters(found[0], found[1], found[2], utc(found[3])) if found else None


def _row(connection: Connection, camera_id: str, hour: datetime, counters: _Counters) -> dict:
    """The camera's row of `hour` (locked for this transaction on PostgreSQL: a replica taking the
    camera over writes it after), or a new one that starts at `counters`."""
    found = connection.execute(
        select(camera_health)
        .where(camera_health.c.camera_id == camera_id, camera_health.c.hour == hour)
        .with_for_update()
    ).first()
    if found is not None:
        return dict(found._mapping)
    return {
        "camera_id": camera_id,
        "hour": hour,
        "minutes": NONE * 60,
        "frames_published": 0,
        "frames_shed": 0,
        "last_published": counters.published,
        "last_shed": counters.shed,
        "replica": counters.replica,
        "updated_at": counters.at,
        "new": True,
    }


def write_samples(connection: Connection, samples: list[Sample]) -> int:
    """Keep the samples (in the order the topic gave them) in the caller's transaction; how many
    minutes they recorded (a replayed or second record of a minute records none)."""
    rows: dict[tuple[str, datetime], dict] = {}
    counters: dict[str, _Counters | None] = {}
    recorded = 0
    for kept in samples:
        if kept.camera_id not in counters:
            counters[kept.camera_id] = _latest(connection, kept.camera_id)
        last = counters[kept.camera_id]
        here = _Counters(kept.published, kept.shed, kept.replica, kept.at)
        key = (kept.camera_id, kept.hour)
        if key not in rows:
            rows[key] = _row(connection, kept.camera_id, kept.hour, last or here)
        row = rows[key]
        minute = kept.at.minute
        if row["minutes"][minute] != NONE:
            continue
        row["minutes"] = row["minutes"][:minute] + CODES.get(kept.state, "?") + row["minutes"][minute + 1 :]
        row["changed"] = True
        recorded += 1
        if last is not None and kept.at < last.at:
            continue  # older than the record the counters are at: no rise to count
        same = last is not None and last.replica == kept.replica
        row["frames_published"] += _rise(kept.published, last.published if last else None, same)
        row["frames_shed"] += _rise(kept.shed, last.shed if last else None, same)
        row.update(
            last_published=kept.published, last_shed=kept.shed, replica=kept.replica, updated_at=kept.at
        )
        counters[kept.camera_id] = here
    for row in rows.values():
        if not row.pop("changed", False):
            continue
        values = {name: value for name, value in row.items() if name != "new"}
        if row.get("new"):
            connection.execute(insert(camera_health).values(**values))
        else:
            where = (camera_health.c.camera_id == row["camera_id"], camera_health.c.hour == row["hour"])
            connection.execute(update(camera_health).where(*where).values(**values))
    return recorded
