"""the history store's first schema

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "alerts",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("alert_id", sa.String(length=64), nullable=False),
        sa.Column("sighting_id", sa.String(length=64), nullable=True),
        sa.Column("camera_id", sa.String(length=128), nullable=False),
        sa.Column("list", sa.String(length=128), nullable=False),
        sa.Column("label", sa.String(length=256), nullable=True),
        sa.Column("plate", sa.String(length=32), nullable=False),
        sa.Column("candidate", sa.String(length=32), nullable=True),
        sa.Column("match_kind", sa.String(length=16), nullable=True),
        sa.Column("distance", sa.Float(), nullable=True),
        sa.Column("confidence", sa.Float(), nullable=True),
        sa.Column("origin", sa.String(length=16), nullable=True),
        sa.Column("captured_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("alerted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("record", sa.JSON(), nullable=True),
        sa.Column("acknowledged_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("acknowledged_by", sa.String(length=128), nullable=True),
        sa.Column("stored_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_alerts")),
        sa.UniqueConstraint("alert_id", name=op.f("uq_alerts_alert_id")),
    )
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_alerts_acknowledged_at"), ["acknowledged_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_alerts_alerted_at"), ["alerted_at"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_alerts_camera_id_alerted_at"), ["camera_id", "alerted_at"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_alerts_plate_alerted_at"), ["plate", "alerted_at"], unique=False)

    op.create_table(
        "audit",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("user", sa.String(length=128), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_audit")),
    )
    op.create_table(
        "plate_variants",
        sa.Column("variant", sa.String(length=32), nullable=False),
        sa.Column("text_key", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("variant", "text_key", name=op.f("pk_plate_variants")),
    )
    op.create_table(
        "sightings",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("sighting_id", sa.String(length=64), nullable=False),
        sa.Column("camera_id", sa.String(length=128), nullable=False),
        sa.Column("text", sa.String(length=32), nullable=False),
        sa.Column("text_key", sa.String(length=32), nullable=False),
        sa.Column("format_valid", sa.Boolean(), nullable=True),
        sa.Column("confidence", sa.Float(), nullable=True),
        sa.Column("reads", sa.Integer(), nullable=True),
        sa.Column("direction", sa.String(length=16), nullable=True),
        sa.Column("zone", sa.String(length=128), nullable=True),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("candidates", sa.JSON(), nullable=True),
        sa.Column("record", sa.JSON(), nullable=True),
        sa.Column("has_picture", sa.Boolean(), nullable=False),
        sa.Column("stored_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_sightings")),
        sa.UniqueConstraint("sighting_id", name=op.f("uq_sightings_sighting_id")),
    )
    with op.batch_alter_table("sightings", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_sightings_camera_id_last_seen"), ["camera_id", "last_seen"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_sightings_last_seen"), ["last_seen"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_sightings_text_key_last_seen"), ["text_key", "last_seen"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_sightings_text_last_seen"), ["text", "last_seen"], unique=False)
        batch_op.create_index(batch_op.f("ix_sightings_zone_last_seen"), ["zone", "last_seen"], unique=False)

    op.create_table(
        "pictures",
        sa.Column("sighting_id", sa.String(length=64), nullable=False),
        sa.Column("jpeg", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["sighting_id"],
            ["sightings.sighting_id"],
            name=op.f("fk_pictures_sighting_id_sightings"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("sighting_id", name=op.f("pk_pictures")),
    )


def downgrade() -> None:
    op.drop_table("pictures")
    with op.batch_alter_table("sightings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sightings_zone_last_seen"))
        batch_op.drop_index(batch_op.f("ix_sightings_text_last_seen"))
        batch_op.drop_index(batch_op.f("ix_sightings_text_key_last_seen"))
        batch_op.drop_index(batch_op.f("ix_sightings_last_seen"))
        batch_op.drop_index(batch_op.f("ix_sightings_camera_id_last_seen"))

    op.drop_table("sightings")
    op.drop_table("plate_variants")
    op.drop_table("audit")
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alerts_plate_alerted_at"))
        batch_op.drop_index(batch_op.f("ix_alerts_camera_id_alerted_at"))
        batch_op.drop_index(batch_op.f("ix_alerts_alerted_at"))
        batch_op.drop_index(batch_op.f("ix_alerts_acknowledged_at"))

    op.drop_table("alerts")
