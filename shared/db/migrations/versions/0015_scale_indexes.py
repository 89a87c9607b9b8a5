"""scale indexes: the sweeper's, the lists' and routing's queries read an index, not the
whole table, at 10,000 evaluations and beyond (benchmarks/scale.py)

- evaluations (state, updated_at): the sweeper's ``state IN (...) AND updated_at < stall``
  every pass;
- evaluations (owner_id, created_at, id): the evaluations list, a user's newest first;
- runs (created_at): the runs lists and advice, newest first;
- agents (last_heartbeat): the live agents every plan and submission reads (rows of dead
  agents stay for their runs' history, so the table grows with agent churn).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28 05:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEXES = (
    ("ix_evaluations_state_updated_at", "evaluations", ["state", "updated_at"]),
    ("ix_evaluations_owner_id_created_at", "evaluations", ["owner_id", "created_at", "id"]),
    ("ix_runs_created_at", "runs", ["created_at"]),
    ("ix_agents_last_heartbeat", "agents", ["last_heartbeat"]),
)


def upgrade() -> None:
    for name, table, columns in INDEXES:
        # An embedded file whose runs table was made by create_all (before migrations)
        # from models that declare the index has it already.
        op.create_index(name, table, columns, unique=False, if_not_exists=True)


def downgrade() -> None:
    for name, table, _ in reversed(INDEXES):
        op.drop_index(name, table_name=table)
