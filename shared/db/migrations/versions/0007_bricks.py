"""DLBricks through the stack: brick evaluations, brick timings per system, recipes

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26 02:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# JSONB on Postgres, JSON elsewhere: the same type as shared.db.base.JSONType, written out
# so the migration stays what it was when the code moves on.
JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("bricks", JSONType, nullable=True))
    op.create_table(
        "brick_timings",
        sa.Column("signature", sa.String(length=100), primary_key=True),
        sa.Column("system", sa.String(length=300), primary_key=True),
        sa.Column("timing", JSONType, nullable=False),
        sa.Column("evaluation_id", sa.String(length=36), nullable=True),
        sa.Column("measured_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_brick_timings_system", "brick_timings", ["system"])
    op.create_table(
        "brick_systems",
        sa.Column("system", sa.String(length=300), primary_key=True),
        sa.Column("floor", JSONType, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "brick_recipes",
        sa.Column("model_name", sa.String(length=200), primary_key=True),
        sa.Column("granularity", sa.Integer(), primary_key=True),
        sa.Column("input_shape", sa.String(length=100), primary_key=True),
        sa.Column("recipe", JSONType, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("brick_recipes")
    op.drop_table("brick_systems")
    op.drop_index("ix_brick_timings_system", table_name="brick_timings")
    op.drop_table("brick_timings")
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.drop_column("bricks")
