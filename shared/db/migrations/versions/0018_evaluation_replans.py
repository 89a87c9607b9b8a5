"""evaluation replans: how many times a run found a shard gone from the object store and
sent its evaluation back to have the shards prepared again (shared/db/lost_objects.py),
so that a store that keeps losing them fails the evaluation after
``lost_object_tries`` instead of looping

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07 20:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("replans", sa.Integer(), nullable=False, server_default=sa.text("0"))
        )


def downgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.drop_column("replans")
