"""Migration 0017: no index names agents.last_heartbeat and the table keeps half of each
page free, so a heartbeat is a heap-only update and agents beating for minutes leave the
table and its indexes as small as they started, vacuum or not. Measured against 0016's
schema, which must grow, so the test can fail."""

from __future__ import annotations

from sqlalchemy import Engine, create_engine, inspect, text
from sqlalchemy.orm import Session

from shared.db import evaluation_repo
from shared.db.base import Base
from shared.db.migrations import upgrade_engine

AGENTS = 50
BEATS = 40  # heartbeats per agent: 2,000 row updates, as 20 s of 200 agents at 1 per 2 s


def _indexed_columns(engine: Engine) -> set[str]:
    return {c for i in inspect(engine).get_indexes("agents") for c in i["column_names"] if c}


def _beat_and_measure(engine: Engine) -> int:
    """The table's and its indexes' bytes after every agent beats BEATS times, a
    transaction per beat of them all as an agent process sends it, with autovacuum off
    for the table (CI's Postgres runs it; the point is what happens before it comes)."""
    with engine.begin() as connection:
        connection.execute(text("ALTER TABLE agents SET (autovacuum_enabled = false)"))
    ids = [f"host/torch/{pid}" for pid in range(AGENTS)]
    with Session(bind=engine) as session, session.begin():
        for agent_id in ids:
            evaluation_repo.upsert_agent(
                session,
                agent_id=agent_id,
                hostname="host",
                queue="torch",
                framework="torch",
                framework_version="2",
                device="cpu",
                hardware={"cpu": {"model": "x" * 400}},  # a row of realistic width
                software={},
            )
    for _ in range(BEATS):
        with Session(bind=engine) as session, session.begin():
            assert evaluation_repo.heartbeat(session, ids) == AGENTS
    with engine.connect() as connection:
        return int(
            connection.scalar(text("SELECT pg_relation_size('agents') + pg_indexes_size('agents')"))
            or 0
        )


def test_0017_drops_the_heartbeat_index_and_sets_the_fillfactor(engine: Engine) -> None:
    upgrade_engine(engine, "0016")
    assert "last_heartbeat" in _indexed_columns(engine)
    upgrade_engine(engine, "0017")
    assert "last_heartbeat" not in _indexed_columns(engine)
    assert not any(
        "last_heartbeat" in [c.name for c in i.columns]
        for i in Base.metadata.tables["agents"].indexes
    )  # the model declares none either
    if engine.dialect.name == "postgresql":
        with engine.connect() as connection:
            options = connection.scalar(
                text("SELECT reloptions FROM pg_class WHERE relname = 'agents'")
            )
        assert "fillfactor=50" in (options or []), options


def test_heartbeats_leave_the_agents_table_as_small_as_it_was(postgres_url: str) -> None:
    engine = create_engine(postgres_url)
    try:
        upgrade_engine(engine, "0016")
        grown = _beat_and_measure(engine)
        upgrade_engine(engine, "0017")
        with engine.begin() as connection:
            # Emptied and its files rewritten, so the pages start with 0017's fillfactor.
            connection.execute(text("TRUNCATE agents"))
        kept = _beat_and_measure(engine)
    finally:
        engine.dispose()
    # 0016: each of the 2,000 beats left a row version and new index entries behind.
    assert grown > 40 * 8192, grown
    # 0017: the beats rewrote their rows in place; a few pages hold 50 agents.
    assert kept < grown / 4, (kept, grown)
