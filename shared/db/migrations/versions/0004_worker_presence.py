"""worker presence: every worker process (not only inference agents) heartbeats

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 15:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "workers",
        sa.Column("id", sa.String(length=300), primary_key=True),
        sa.Column("kind", sa.String(length=50), nullable=False),
        sa.Column("node", sa.String(length=250), nullable=False),
        sa.Column("hostname", sa.String(length=200), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_heartbeat", sa.DateTime(timezone=True), nullable=False),
        sa.Column("stopped_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_workers_kind", "workers", ["kind"])


def downgrade() -> None:
    op.drop_index("ix_workers_kind", table_name="workers")
    op.drop_table("workers")
