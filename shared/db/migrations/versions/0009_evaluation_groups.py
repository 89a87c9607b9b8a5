"""what an evaluation's group is: a fan-out, or a sweep point with its parameter and value

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 03:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# JSONB on Postgres, JSON elsewhere (shared.db.base.JSONType, written out).
JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("group_info", JSONType, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.drop_column("group_info")
