"""the reports' counts: sightings per camera per hour and per day, each plate's sightings per day
and each day's sightings and distinct plates, counted from the sightings already stored

Revision ID: 0009
Revises: 0008

The writer keeps them from here on (store/report_counts.py). The counting is written out here, as
it is at this revision, rather than imported: a migration stays what it was when later code moves.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

NAME, PLATE = 128, 32
_SQLITE_CUT = {"hour": 13, "day": 10}  # of the stored "YYYY-MM-DD HH:MM:SS.ffffff" (UTC)
_POSTGRES_CUT = {"hour": "YYYY-MM-DD HH24", "day": "YYYY-MM-DD"}


def _counts(name: str, bucket: str, width: int, key: str, key_length: int) -> None:
    op.create_table(
        name,
        sa.Column(bucket, sa.String(length=width), nullable=False),
        sa.Column(key, sa.String(length=key_length), nullable=False),
        sa.Column("sightings", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint(bucket, key, name=op.f(f"pk_{name}")),
    )


def _cut(column: sa.ColumnElement, unit: str) -> sa.ColumnElement:
    if op.get_bind().dialect.name == "postgresql":
        return sa.func.to_char(sa.func.timezone("UTC", column), _POSTGRES_CUT[unit])
    return sa.func.substr(column, 1, _SQLITE_CUT[unit])


def upgrade() -> None:
    _counts("sighting_hours", "hour", 13, "camera_id", NAME)
    _counts("sighting_days", "day", 10, "camera_id", NAME)
    _counts("plate_days", "day", 10, "text_key", PLATE)
    op.create_table(
        "day_plates",
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("sightings", sa.Integer(), nullable=False),
        sa.Column("unique_plates", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("day", name=op.f("pk_day_plates")),
    )
    sightings = sa.table(
        "sightings",
        sa.column("camera_id", sa.String),
        sa.column("text_key", sa.String),
        sa.column("last_seen", sa.DateTime(timezone=True)),
    )
    bind = op.get_bind()
    for name, unit, key in (
        ("sighting_hours", "hour", "camera_id"),
        ("sighting_days", "day", "camera_id"),
        ("plate_days", "day", "text_key"),
    ):
        target = sa.table(name, sa.column(unit), sa.column(key), sa.column("sightings"))
        at = _cut(sightings.c.last_seen, unit).label("bucket")
        counts = sa.select(at, sightings.c[key], sa.func.count()).group_by(at, sightings.c[key])
        bind.execute(sa.insert(target).from_select([unit, key, "sightings"], counts))
    target = sa.table("day_plates", sa.column("day"), sa.column("sightings"), sa.column("unique_plates"))
    at = _cut(sightings.c.last_seen, "day").label("bucket")
    plates = sa.func.count(sa.distinct(sightings.c.text_key))
    totals = sa.select(at, sa.func.count(), plates).group_by(at)
    bind.execute(sa.insert(target).from_select(["day", "sightings", "unique_plates"], totals))


def downgrade() -> None:
    for name in ("day_plates", "plate_days", "sighting_days", "sighting_hours"):
        op.drop_table(name)
