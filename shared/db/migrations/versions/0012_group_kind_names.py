"""group kinds named for what they are: "ddp" -> "training-scaling", "submission" ->
"accuracy-performance-pair", in evaluations' group_info and runs' reports

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27 15:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RENAMED = {"ddp": "training-scaling", "submission": "accuracy-performance-pair"}
# (table, column, path of the kind inside the JSON document)
KIND_AT = (("evaluations", "group_info", ("kind",)), ("runs", "report", ("group", "kind")))


def _rename(old: str, new: str) -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for table, column, path in KIND_AT:
        if postgres:
            where = f"{column}" + "".join(f"->'{p}'" for p in path[:-1]) + f"->>'{path[-1]}'"
            op.execute(
                f"UPDATE {table} SET {column} = jsonb_set({column}, "
                f"'{{{','.join(path)}}}', '\"{new}\"') WHERE {where} = '{old}'"
            )
        else:
            json_path = "$." + ".".join(path)
            op.execute(
                f"UPDATE {table} SET {column} = json_set({column}, '{json_path}', '{new}') "
                f"WHERE json_extract({column}, '{json_path}') = '{old}'"
            )


def upgrade() -> None:
    for old, new in RENAMED.items():
        _rename(old, new)


def downgrade() -> None:
    for old, new in RENAMED.items():
        _rename(new, old)
