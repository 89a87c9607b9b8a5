"""Migration 0015 adds the indexes the sweeper, the lists and routing read, and the
models declare the same ones; on Postgres the sweeper's query then reads its index. On
SQLite and on Postgres, and it goes back down."""

from __future__ import annotations

from sqlalchemy import Engine, inspect, text

from shared.db.base import Base
from shared.db.migrations import upgrade_engine

ADDED = {
    "evaluations": {
        "ix_evaluations_state_updated_at": ["state", "updated_at"],
        "ix_evaluations_owner_id_created_at": ["owner_id", "created_at", "id"],
    },
    "runs": {"ix_runs_created_at": ["created_at"]},
    "agents": {"ix_agents_last_heartbeat": ["last_heartbeat"]},
}
# Made by 0015 and dropped by 0017 (heartbeats rewrite their rows in place): the models
# do not declare it.
DROPPED_LATER = {"ix_agents_last_heartbeat"}


def _indexes(engine: Engine, table: str) -> dict[str, list[str]]:
    return {str(i["name"]): list(i["column_names"]) for i in inspect(engine).get_indexes(table)}


def test_the_indexes_come_with_0015_and_go_with_its_downgrade(engine: Engine) -> None:
    upgrade_engine(engine, "0014")
    for table, wanted in ADDED.items():
        assert not set(wanted) & set(_indexes(engine, table))
    upgrade_engine(engine, "0015")
    for table, wanted in ADDED.items():
        found = _indexes(engine, table)
        assert {name: found.get(name) for name in wanted} == wanted
        declared = {i.name for i in Base.metadata.tables[table].indexes}
        assert set(wanted) - DROPPED_LATER <= declared  # the models say what it made
    from alembic import command

    from shared.db.migrations import alembic_config

    with engine.connect() as connection:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.downgrade(config, "0014")
        connection.commit()
    for table, wanted in ADDED.items():
        assert not set(wanted) & set(_indexes(engine, table))


def test_the_sweepers_query_reads_its_index_on_postgres(postgres_url: str) -> None:
    from shared.db.session import get_engine

    engine = get_engine(postgres_url)  # migrated to the newest revision
    with engine.begin() as connection:
        connection.execute(text("SET LOCAL enable_seqscan = off"))
        plan = "\n".join(
            row[0]
            for row in connection.execute(
                text(
                    "EXPLAIN SELECT id FROM evaluations WHERE state IN ('QUEUED', "
                    "'PREPROCESSING', 'AGGREGATING') AND updated_at < now()"
                )
            )
        )
    assert "ix_evaluations_state_updated_at" in plan, plan
