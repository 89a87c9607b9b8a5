"""token expiry and private registered models

Every token gets an expiry. Tokens made before this revision get one 90 days from the
upgrade, so a deployment keeps working while its users move to new tokens, instead of
either breaking at once or keeping tokens that never expire.

Registered models become private to their owner unless shared. Rows stored before this
revision become private too: they were readable by everyone only because no choice existed.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The grace period of tokens made before expiry existed: the default token lifetime.
_GRACE = timedelta(days=90)


def upgrade() -> None:
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
    tokens = sa.table("api_tokens", sa.column("expires_at", sa.DateTime(timezone=True)))
    op.execute(tokens.update().values(expires_at=datetime.now(UTC) + _GRACE))
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.alter_column(
            "expires_at", existing_type=sa.DateTime(timezone=True), nullable=False
        )

    with op.batch_alter_table("models", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("shared", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("models", schema=None) as batch_op:
        batch_op.drop_column("shared")
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_column("expires_at")
