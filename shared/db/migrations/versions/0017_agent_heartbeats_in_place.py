"""agent heartbeats in place: an agent's heartbeat rewrites its row without touching any
index, so it leaves nothing behind for vacuum (benchmarks/scale.py, docs/scale.md).

0015 indexed agents.last_heartbeat for the live-agent reads. Every heartbeat changes that
column, so no heartbeat could be a heap-only (HOT) update: each one wrote a new entry into
every index of the table and left a dead row version. With 200 agents beating (about 110
row updates a second) and vacuum behind, the 200-row table grew by about 3.5 MB a minute,
and the live-agent read every plan and submission makes scanned all of it. Without an
index on the column, and with half of each page kept free for new versions
(``fillfactor`` 50), a heartbeat is a HOT update: the new version goes into the same page
and the old one is pruned the next time the page is read, vacuum or not.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-29 12:20:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FILLFACTOR = 50


def upgrade() -> None:
    op.drop_index("ix_agents_last_heartbeat", table_name="agents", if_exists=True)
    if op.get_bind().dialect.name == "postgresql":
        # Applies to the pages written from now on; the existing ones fill as rows move.
        op.execute(f"ALTER TABLE agents SET (fillfactor = {FILLFACTOR})")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE agents RESET (fillfactor)")
    op.create_index("ix_agents_last_heartbeat", "agents", ["last_heartbeat"], unique=False)
