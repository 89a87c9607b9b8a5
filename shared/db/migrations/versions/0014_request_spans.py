"""request spans: each service's span of an evaluation's request (the API's submission,
each worker task), so a run's stored trace holds the whole request

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27 22:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# JSONB on Postgres, JSON elsewhere: the same type as shared.db.base.JSONType, written out
# so that this migration does not change when the models do.
JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "request_spans",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("evaluation_id", sa.String(length=36), nullable=False),
        sa.Column("trace_id", sa.String(length=32), nullable=False),
        sa.Column("span_id", sa.String(length=16), nullable=False),
        sa.Column("parent_id", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("service", sa.String(length=100), nullable=False),
        sa.Column("start_ns", sa.BigInteger(), nullable=False),
        sa.Column("end_ns", sa.BigInteger(), nullable=False),
        sa.Column("attributes", JSONType, nullable=False),
        sa.ForeignKeyConstraint(
            ["evaluation_id"],
            ["evaluations.id"],
            name=op.f("fk_request_spans_evaluation_id_evaluations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_request_spans")),
    )
    op.create_index(
        op.f("ix_request_spans_evaluation_id"), "request_spans", ["evaluation_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_request_spans_evaluation_id"), table_name="request_spans")
    op.drop_table("request_spans")
