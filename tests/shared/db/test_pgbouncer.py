"""Through a PgBouncer in transaction mode, as docs/scale.md puts one in front of many
agents: services that start together migrate one after another (a transaction-scoped
advisory lock; a session lock's unlock could reach another server connection and hang
the next migrator), and 40 agent processes' registrations and heartbeats share 4 server
connections."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, func, make_url, select, text
from sqlalchemy.orm import Session

from shared.db import evaluation_repo
from shared.db.evaluations import Agent
from shared.db.migrations import alembic_config, upgrade_engine
from tests.support.pgbouncer import Bouncer, NoPgBouncer, pgbouncer

MIGRATORS = 3
MIGRATE_TIMEOUT_S = 90
AGENT_PROCESSES = 40
BEATS = 10


@dataclass(frozen=True)
class Bounced:
    bouncer: Bouncer
    name: str  # a fresh database, reached through the bouncer
    direct_url: str  # the same database, reached directly, for the checks


@pytest.fixture
def bounced(postgres_url: str) -> Iterator[Bounced]:
    """A PgBouncer in front of the test server, and the fresh database of ``postgres_url``
    (not migrated yet)."""
    try:
        with pgbouncer(postgres_url, pool_size=4) as bouncer:
            yield Bounced(bouncer, str(make_url(postgres_url).database), postgres_url)
    except NoPgBouncer as exc:
        if os.environ.get("BENCHSTACK_REQUIRE_SERVERS") == "1":
            raise
        pytest.skip(str(exc))


def test_services_starting_together_migrate_through_the_pooler(
    bounced: Bounced,
) -> None:
    """Three processes, as three services starting at once; each is given a bounded time
    (a lock stranded on a pooled server connection hangs the others for good)."""
    bouncer, name = bounced.bouncer, bounced.name
    at = time.time() + 3  # they start together, past their imports
    script = (
        "import sys, time\n"
        "from sqlalchemy import create_engine, text\n"
        "from shared.db.migrations import upgrade_engine\n"
        "engine = create_engine(sys.argv[1])\n"
        "time.sleep(max(0.0, float(sys.argv[2]) - time.time()))\n"
        "upgrade_engine(engine)\n"
        "with engine.connect() as c:\n"
        "    print(c.scalar(text('SELECT version_num FROM alembic_version')))\n"
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, bouncer.url(name), str(at)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(MIGRATORS)
    ]
    outputs = []
    try:
        for process in processes:
            out, err = process.communicate(timeout=MIGRATE_TIMEOUT_S)
            assert process.returncode == 0, err[-2000:]
            outputs.append(out.strip())
    except subprocess.TimeoutExpired:
        pytest.fail(f"a migrator still waited after {MIGRATE_TIMEOUT_S} s: a stranded lock")
    finally:
        for process in processes:
            process.kill()
            process.wait()
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert outputs == [head] * MIGRATORS
    # No lock outlives its migrator on the bouncer's server connections.
    direct = create_engine(bounced.direct_url)
    try:
        with direct.connect() as connection:
            held = connection.scalar(
                text(
                    "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
                    "WHERE l.locktype = 'advisory' AND a.datname = :name"
                ),
                {"name": name},
            )
    finally:
        direct.dispose()
    assert held == 0, f"{held} advisory lock(s) left held on pooled server connections"


def test_forty_agent_processes_share_the_pools_server_connections(
    bounced: Bounced,
) -> None:
    bouncer, name = bounced.bouncer, bounced.name
    url = bouncer.url(name)
    migrator = create_engine(url)
    upgrade_engine(migrator)
    direct = create_engine(bounced.direct_url)
    engines = [create_engine(url, pool_size=2, max_overflow=1) for _ in range(AGENT_PROCESSES)]
    start = threading.Barrier(AGENT_PROCESSES)
    done = threading.Event()
    server_counts: list[int] = []

    def watch() -> None:
        with direct.connect() as connection:
            while not done.is_set():
                server_counts.append(
                    int(
                        connection.scalar(
                            # The bouncer's server connections: this one aside.
                            text(
                                "SELECT count(*) FROM pg_stat_activity "
                                "WHERE datname = :name AND pid <> pg_backend_pid()"
                            ),
                            {"name": name},
                        )
                        or 0
                    )
                )
                connection.rollback()
                time.sleep(0.01)

    def agent(index: int) -> None:
        agent_id = f"host{index}/torch/{index}"
        start.wait()
        with Session(bind=engines[index]) as session, session.begin():
            evaluation_repo.upsert_agent(
                session,
                agent_id=agent_id,
                hostname=f"host{index}",
                queue="torch",
                framework="torch",
                framework_version="2",
                device="cpu",
                hardware={},
                software={},
            )
        for _ in range(BEATS):
            with Session(bind=engines[index]) as session, session.begin():
                assert evaluation_repo.heartbeat(session, [agent_id]) == 1
                assert evaluation_repo.live_agents(session, within_s=60)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with ThreadPoolExecutor(AGENT_PROCESSES) as pool:
            for future in [pool.submit(agent, i) for i in range(AGENT_PROCESSES)]:
                future.result(timeout=120)
    finally:
        done.set()
        watcher.join()
        for engine in engines:
            engine.dispose()
        direct.dispose()
    with Session(bind=migrator) as session:
        assert session.scalar(select(func.count()).select_from(Agent)) == AGENT_PROCESSES
    migrator.dispose()
    assert server_counts, "no sample of the server's connections was taken"
    # 40 clients, each with its own pool, and never more server connections than the
    # bouncer's pool for this database and user.
    assert 0 < max(server_counts) <= bouncer.server_pool_size, server_counts
