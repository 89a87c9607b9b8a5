"""evaluation dispatches and agent busy_since: what the sweeper needs to tell a stalled
evaluation (re-dispatch it) from one queued behind a busy agent (leave it)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 15:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("dispatches", sa.Integer(), nullable=False, server_default=sa.text("0"))
        )
    with op.batch_alter_table("agents", schema=None) as batch_op:
        batch_op.add_column(sa.Column("busy_since", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agents", schema=None) as batch_op:
        batch_op.drop_column("busy_since")
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.drop_column("dispatches")
