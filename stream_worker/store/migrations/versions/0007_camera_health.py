"""the cameras' health over time: a row per camera per hour of the camera-status records, the state
of each minute and the frames published and shed

Revision ID: 0007
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "camera_health",
        sa.Column("camera_id", sa.String(length=128), nullable=False),
        sa.Column("hour", sa.DateTime(timezone=True), nullable=False),
        sa.Column("minutes", sa.String(length=60), nullable=False),
        sa.Column("frames_published", sa.BigInteger(), nullable=False),
        sa.Column("frames_shed", sa.BigInteger(), nullable=False),
        sa.Column("last_published", sa.BigInteger(), nullable=False),
        sa.Column("last_shed", sa.BigInteger(), nullable=True),
        sa.Column("replica", sa.String(length=128), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("camera_id", "hour", name=op.f("pk_camera_health")),
    )
    with op.batch_alter_table("camera_health", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_camera_health_hour_camera_id"), ["hour", "camera_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("camera_health", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_camera_health_hour_camera_id"))
    op.drop_table("camera_health")
