"""agent settings and direct queues; evaluation groups (fan-out comparisons)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# JSONB on Postgres (indexable), JSON elsewhere; the same type as shared.db.base.JSONType.
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Server defaults fill the rows that exist already: agents registered before this
    # revision advertise no settings and have no direct queue until they re-register.
    with op.batch_alter_table("agents", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("settings", JSON, nullable=False, server_default=sa.text("'{}'"))
        )
        batch_op.add_column(
            sa.Column("direct_queue", sa.String(length=300), nullable=False, server_default="")
        )
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("group_id", sa.String(length=36), nullable=True))
        batch_op.create_index(batch_op.f("ix_evaluations_group_id"), ["group_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_evaluations_group_id"))
        batch_op.drop_column("group_id")
    with op.batch_alter_table("agents", schema=None) as batch_op:
        batch_op.drop_column("direct_queue")
        batch_op.drop_column("settings")
