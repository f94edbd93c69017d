"""the reports' covering index: sightings by (last_seen, camera_id, text_key), so counts per camera
and distinct plates over a time range read the index alone, not the sightings' rows

Revision ID: 0005
Revises: 0003
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sightings", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_sightings_last_seen_camera_id_text_key"),
            ["last_seen", "camera_id", "text_key"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("sightings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sightings_last_seen_camera_id_text_key"))
