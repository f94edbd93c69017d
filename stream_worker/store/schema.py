"""The history store's tables, one SQLAlchemy `MetaData` for SQLite and PostgreSQL alike.

Migrations (`migrations/`) create and change them; nothing else calls `create_all`. Every row that
Kafka delivered carries its message's own id under a unique constraint, which is what makes the
writer idempotent: a batch read again after a crash inserts nothing twice. `seq` is the store's
own order (autoincrement), what the live feed and the pages follow, on any number of replicas.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
)

PLATE = 32  # longer than any plate text the recognizer reads
ID = 64  # UUID text
NAME = 128  # camera ids, list names, zones, user names

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


def _time(name: str, nullable: bool = True) -> Column:
    return Column(name, DateTime(timezone=True), nullable=nullable)


sightings = Table(
    "sightings",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("sighting_id", String(ID), nullable=False, unique=True),
    Column("camera_id", String(NAME), nullable=False),
    Column("text", String(PLATE), nullable=False),
    Column("text_key", String(PLATE), nullable=False),  # plate_keys.fold(text)
    Column("format_valid", Boolean),
    Column("confidence", Float),
    Column("reads", Integer),
    Column("direction", String(16)),
    Column("zone", String(NAME)),  # the best read's zone
    _time("first_seen", nullable=False),
    _time("last_seen", nullable=False),
    _time("closed_at"),
    Column("candidates", JSON),
    Column("record", JSON),  # the PlateSighting without the best read's picture
    Column("has_picture", Boolean, nullable=False, default=False),
    _time("stored_at"),
    Index(None, "text", "last_seen"),
    Index(None, "text_key", "last_seen"),
    Index(None, "camera_id", "last_seen"),
    Index(None, "last_seen"),
    Index(None, "zone", "last_seen"),
    Index(None, "last_seen", "camera_id", "text_key"),  # the reports (reports.py) read it alone
)

pictures = Table(
    "pictures",
    metadata,
    Column(
        "sighting_id",
        String(ID),
        ForeignKey("sightings.sighting_id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("jpeg", LargeBinary, nullable=False),
)

# One row per distinct folded plate and each of its one-deletion variants (plate_keys.variants):
# the symmetric-deletion index fuzzy search goes through.
plate_variants = Table(
    "plate_variants",
    metadata,
    Column("variant", String(PLATE), primary_key=True),
    Column("text_key", String(PLATE), primary_key=True),
)

alerts = Table(
    "alerts",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("alert_id", String(ID), nullable=False, unique=True),
    Column("sighting_id", String(ID)),
    Column("camera_id", String(NAME), nullable=False),
    Column("list", String(NAME), nullable=False),
    Column("label", String(256)),
    Column("plate", String(PLATE), nullable=False),  # the entry's plate
    Column("candidate", String(PLATE)),
    Column("match_kind", String(16)),
    Column("distance", Float),
    Column("confidence", Float),
    Column("origin", String(16)),
    _time("captured_at"),
    _time("alerted_at", nullable=False),
    Column("record", JSON),
    _time("acknowledged_at"),
    Column("acknowledged_by", String(NAME)),
    _time("stored_at"),
    # Set when an operator corrected the alert's sighting to a text its entry no longer matches
    # (store/corrections.py); null while the alert stands.
    Column("corrected_text", String(PLATE)),
    _time("corrected_at"),
    Index(None, "alerted_at"),
    Index(None, "plate", "alerted_at"),
    Index(None, "camera_id", "alerted_at"),
    Index(None, "acknowledged_at"),
)

audit = Table(
    "audit",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    _time("at", nullable=False),
    Column("user", String(NAME), nullable=False),
    Column("action", String(64), nullable=False),
    Column("detail", JSON),
)

# The console's signed-in sessions (store/sessions.py), here so that every store replica on the
# database sees the same ones: the cookie carries a random id, the row only its SHA-256.
console_sessions = Table(
    "console_sessions",
    metadata,
    Column("id_hash", String(ID), primary_key=True),
    Column("user", String(NAME), nullable=False),
    Column("password_mark", String(ID), nullable=False),  # which password signed it in
    _time("created_at", nullable=False),
    _time("last_seen", nullable=False),
    Index(None, "user"),
    Index(None, "last_seen"),
)

# The operators' latest review of a sighting's read (the corrections topic's record), beside the
# sighting: `text`/`text_key` are the corrected plate, which search finds as it finds `sightings.text`.
corrections = Table(
    "corrections",
    metadata,
    Column(
        "sighting_id",
        String(ID),
        ForeignKey("sightings.sighting_id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("camera_id", String(NAME), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("old_text", String(PLATE), nullable=False),
    Column("text", String(PLATE), nullable=False),
    Column("text_key", String(PLATE), nullable=False),
    Column("region", String(32)),
    Column("country", String(32)),
    Column("corrected_by", String(NAME), nullable=False),
    _time("corrected_at", nullable=False),
    Index(None, "text"),
    Index(None, "text_key"),
)

# The cameras' health over time (camera_health.py), from the connector's `camera-status` records:
# a row per camera per hour, `minutes` one character per minute (the state of the minute's first
# record, "." without one), the frames published and shed in the hour (the rises of the connector's
# counters), and the last record's counters, from which the next one's rises are counted.
camera_health = Table(
    "camera_health",
    metadata,
    Column("camera_id", String(NAME), primary_key=True),
    Column("hour", DateTime(timezone=True), primary_key=True),  # UTC
    Column("minutes", String(60), nullable=False),
    Column("frames_published", BigInteger, nullable=False),
    Column("frames_shed", BigInteger, nullable=False),
    Column("last_published", BigInteger, nullable=False),
    Column("last_shed", BigInteger),  # None from a connector without shedding
    Column("replica", String(NAME), nullable=False),
    _time("updated_at", nullable=False),  # the last record's
    Index(None, "hour", "camera_id"),  # the report's order
)


# One row per visit (the visits topic's PlateVisit events, upserted by `visit_id`: store/visits.py).
# Each event kind fills its own columns (opened: the entry's; overstay: overstayed_at; closed: the
# exit's and `closed_at`), so events replayed or read out of order leave the same row. `closed_at`
# NULL: the vehicle is on site.
visits = Table(
    "visits",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("visit_id", String(ID), nullable=False, unique=True),
    Column("site", String(NAME), nullable=False),
    Column("plate", String(PLATE), nullable=False),
    Column("text_key", String(PLATE), nullable=False),  # plate_keys.fold(plate)
    Column("entry_camera_id", String(NAME), nullable=False),
    Column("entry_sighting_id", String(ID), nullable=False),
    _time("entered_at", nullable=False),
    Column("overstay_s", Float),  # the visit's limit, if it has one
    _time("overstayed_at"),
    _time("closed_at"),  # the closed event's `at`: the exit's capture time, or the re-entry's
    Column("ended_by", String(16)),
    Column("dwell_s", Float),  # at closed_at
    Column("exit_camera_id", String(NAME)),
    Column("exit_sighting_id", String(ID)),
    Column("exit_text", String(PLATE)),
    _time("exited_at"),
    _time("stored_at"),
    Index(None, "entered_at"),
    Index(None, "plate", "entered_at"),
    Index(None, "text_key", "entered_at"),
    Index(None, "exit_text"),
    Index(None, "site", "entered_at"),
    # On site (closed_at IS NULL) and the dwell report, which reads this index alone.
    Index(None, "closed_at", "ended_by", "dwell_s", "entry_camera_id", "exit_camera_id"),
)


# The reports' counts (report_counts.py), kept by the writer in the sightings' transaction so that a
# report over a year reads a row per camera per day, not every sighting. The buckets are the
# reports' own cut of the UTC time as text ("YYYY-MM-DD HH", "YYYY-MM-DD"), the label either
# database gives the same sighting; a row goes when its count reaches 0.
sighting_hours = Table(
    "sighting_hours",
    metadata,
    Column("hour", String(13), primary_key=True),
    Column("camera_id", String(NAME), primary_key=True),
    Column("sightings", Integer, nullable=False),
)

sighting_days = Table(
    "sighting_days",
    metadata,
    Column("day", String(10), primary_key=True),
    Column("camera_id", String(NAME), primary_key=True),
    Column("sightings", Integer, nullable=False),
)

# A row per plate (folded text) per day with its sightings that day: what tells the writer that a
# sighting's plate is new that day, so that `day_plates` counts each plate once.
plate_days = Table(
    "plate_days",
    metadata,
    Column("day", String(10), primary_key=True),
    Column("text_key", String(PLATE), primary_key=True),
    Column("sightings", Integer, nullable=False),
)

day_plates = Table(
    "day_plates",
    metadata,
    Column("day", String(10), primary_key=True),
    Column("sightings", Integer, nullable=False),
    Column("unique_plates", Integer, nullable=False),
)
