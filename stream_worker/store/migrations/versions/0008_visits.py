"""the visits (the visits topic's PlateVisit events, one row per visit)

Revision ID: 0008
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

INDEXES = (
    ("entered_at",),
    ("plate", "entered_at"),
    ("text_key", "entered_at"),
    ("exit_text",),
    ("site", "entered_at"),
    ("closed_at", "ended_by", "dwell_s", "entry_camera_id", "exit_camera_id"),
)


def upgrade() -> None:
    op.create_table(
        "visits",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("visit_id", sa.String(length=64), nullable=False),
        sa.Column("site", sa.String(length=128), nullable=False),
        sa.Column("plate", sa.String(length=32), nullable=False),
        sa.Column("text_key", sa.String(length=32), nullable=False),
        sa.Column("entry_camera_id", sa.String(length=128), nullable=False),
        sa.Column("entry_sighting_id", sa.String(length=64), nullable=False),
        sa.Column("entered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("overstay_s", sa.Float(), nullable=True),
        sa.Column("overstayed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_by", sa.String(length=16), nullable=True),
        sa.Column("dwell_s", sa.Float(), nullable=True),
        sa.Column("exit_camera_id", sa.String(length=128), nullable=True),
        sa.Column("exit_sighting_id", sa.String(length=64), nullable=True),
        sa.Column("exit_text", sa.String(length=32), nullable=True),
        sa.Column("exited_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("stored_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_visits")),
        sa.UniqueConstraint("visit_id", name=op.f("uq_visits_visit_id")),
    )
    with op.batch_alter_table("visits", schema=None) as batch_op:
        for columns in INDEXES:
            batch_op.create_index(batch_op.f(f"ix_visits_{'_'.join(columns)}"), list(columns), unique=False)


def downgrade() -> None:
    with op.batch_alter_table("visits", schema=None) as batch_op:
        for columns in reversed(INDEXES):
            batch_op.drop_index(batch_op.f(f"ix_visits_{'_'.join(columns)}"))
    op.drop_table("visits")
