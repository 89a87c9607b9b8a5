"""brick memory: each system's memory read cost (ms per MB) beside its floor, for the
cold-weights construction (services/workloads/bricks/memory.py). Null for a system whose
agents measured before it existed: its construction then says so.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-29 09:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# JSONB on Postgres, JSON elsewhere, written out as 0007 does: the migration stays what
# it was when the code moves on.
JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("brick_systems", schema=None) as batch_op:
        batch_op.add_column(sa.Column("memory", JSONType, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("brick_systems", schema=None) as batch_op:
        batch_op.drop_column("memory")
