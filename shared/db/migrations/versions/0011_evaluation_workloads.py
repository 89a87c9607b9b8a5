"""the kind of measurement as a name and its options (services/workloads/<name>/), instead
of a column per kind (bricks, training)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27 14:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# JSONB on Postgres, JSON elsewhere: the same type as shared.db.base.JSONType, written out
# so the migration stays what it was when the code moves on.
JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The kinds that had a column of their own, in the order a row was read before: a row
# with both (never written: the API refused it) was a DLBricks evaluation.
OLD_KINDS = ("training", "bricks")


def upgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("workload", sa.String(40), nullable=False, server_default="loadgen")
        )
        batch_op.add_column(sa.Column("workload_options", JSONType, nullable=True))
    for kind in OLD_KINDS:
        op.execute(
            f"UPDATE evaluations SET workload = '{kind}', workload_options = {kind} "
            f"WHERE {kind} IS NOT NULL"
        )
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        for kind in OLD_KINDS:
            batch_op.drop_column(kind)


def downgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        for kind in OLD_KINDS:
            batch_op.add_column(sa.Column(kind, JSONType, nullable=True))
    for kind in OLD_KINDS:
        op.execute(f"UPDATE evaluations SET {kind} = workload_options WHERE workload = '{kind}'")
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.drop_column("workload_options")
        batch_op.drop_column("workload")
