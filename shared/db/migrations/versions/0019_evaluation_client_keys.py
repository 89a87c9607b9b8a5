"""evaluation client keys: a submission may carry the client's idempotency key, unique per
user, so a client that retries a submission it got no answer for (a hung broker or
database) finds the evaluation its first try made instead of making a second.

A key is the client's, so two users may use the same one; NULL (no key) repeats freely in
a unique index, on Postgres and SQLite alike.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07 20:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = "uq_evaluations_owner_id_client_key"


def upgrade() -> None:
    op.add_column("evaluations", sa.Column("client_key", sa.String(length=100), nullable=True))
    # A unique index rather than a constraint: SQLite cannot add a constraint to a table.
    op.create_index(INDEX, "evaluations", ["owner_id", "client_key"], unique=True)


def downgrade() -> None:
    op.drop_index(INDEX, table_name="evaluations")
    with op.batch_alter_table("evaluations") as batch:
        batch.drop_column("client_key")
