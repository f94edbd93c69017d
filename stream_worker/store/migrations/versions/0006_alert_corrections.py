"""an alert whose sighting an operator corrected to a text its entry no longer matches: the
corrected text and when (null while the alert stands)

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("corrected_text", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("corrected_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_column("corrected_at")
        batch_op.drop_column("corrected_text")
