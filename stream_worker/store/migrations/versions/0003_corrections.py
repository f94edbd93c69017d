"""the operators' corrections of reads, beside the sightings

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "corrections",
        sa.Column("sighting_id", sa.String(length=64), nullable=False),
        sa.Column("camera_id", sa.String(length=128), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("old_text", sa.String(length=32), nullable=False),
        sa.Column("text", sa.String(length=32), nullable=False),
        sa.Column("text_key", sa.String(length=32), nullable=False),
        sa.Column("region", sa.String(length=32), nullable=True),
        sa.Column("country", sa.String(length=32), nullable=True),
        sa.Column("corrected_by", sa.String(length=128), nullable=False),
        sa.Column("corrected_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["sighting_id"],
            ["sightings.sighting_id"],
            name=op.f("fk_corrections_sighting_id_sightings"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("sighting_id", name=op.f("pk_corrections")),
    )
    with op.batch_alter_table("corrections", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_corrections_text"), ["text"], unique=False)
        batch_op.create_index(batch_op.f("ix_corrections_text_key"), ["text_key"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("corrections", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_corrections_text_key"))
        batch_op.drop_index(batch_op.f("ix_corrections_text"))
    op.drop_table("corrections")
