"""training evaluations

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26 03:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# JSONB on Postgres, JSON elsewhere (shared.db.base.JSONType, written out).
JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("training", JSONType, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.drop_column("training")
