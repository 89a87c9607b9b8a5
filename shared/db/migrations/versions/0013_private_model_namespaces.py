"""registered models: a name and version are unique per owner, not across users, so a
private model's name is never refused to someone else (which told them it existed)

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27 18:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("models", schema=None) as batch_op:
        batch_op.drop_constraint("uq_models_name_version", type_="unique")
        batch_op.create_unique_constraint(
            "uq_models_owner_name_version", ["owner_id", "name", "version"]
        )


def downgrade() -> None:
    with op.batch_alter_table("models", schema=None) as batch_op:
        batch_op.drop_constraint("uq_models_owner_name_version", type_="unique")
        batch_op.create_unique_constraint("uq_models_name_version", ["name", "version"])
