"""The live agents routing reads: the columns a plan needs, live ones only, newest first."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from services.scheduler.agents import live_agent_views
from shared import runtime
from shared.db import evaluation_repo
from shared.db.clock import utcnow
from shared.db.evaluations import Agent
from shared.settings import Settings


def _register(agent_id: str, hostname: str, *, threads: int = 0) -> None:
    with runtime.db() as session:
        evaluation_repo.upsert_agent(
            session,
            agent_id=agent_id,
            hostname=hostname,
            queue="inference.null.cpu",
            framework="null",
            framework_version="1.0",
            device="cpu",
            hardware={
                "cpu": {"architecture": "x86_64", "logical_cores": 8},
                "memory_bytes": 2**34,
                "gpus": [{"name": "H100"}],
            },
            software={},
            settings={"intra_op_threads": threads},
            direct_queue=f"inference.null.cpu@{hostname}/1",
        )


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(
    request: pytest.FixtureRequest, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Settings]:
    """The embedded SQLite file, then a fresh Postgres database: the JSON fields are picked
    out in SQL, which the two write differently."""
    if request.param == "postgresql":
        monkeypatch.setenv("BENCHSTACK_DATABASE_URL", request.getfixturevalue("postgres_url"))
    runtime.reset()
    yield runtime.settings()
    runtime.reset()


def test_live_agent_views_are_the_live_agents_newest_beat_first(backend: Settings) -> None:
    settings = backend
    _register("a/inference.null.cpu/1", "a", threads=2)
    _register("b/inference.null.cpu/1", "b")
    _register("stopped/inference.null.cpu/1", "stopped")
    _register("silent/inference.null.cpu/1", "silent")
    with runtime.db() as session:
        evaluation_repo.mark_agents_stopped(session, ["stopped/inference.null.cpu/1"])
        long_ago = utcnow() - timedelta(seconds=settings.agent_heartbeat_seconds * 10)
        session.get(Agent, "silent/inference.null.cpu/1").last_heartbeat = long_ago  # type: ignore[union-attr]
        session.get(Agent, "a/inference.null.cpu/1").last_heartbeat = utcnow() + timedelta(  # type: ignore[union-attr]
            seconds=1
        )
    with runtime.db() as session:
        views = live_agent_views(session, settings)
    assert [v.id for v in views] == ["a/inference.null.cpu/1", "b/inference.null.cpu/1"]
    first = views[0]
    assert (first.arch, first.logical_cores, first.memory_bytes, first.gpus) == (
        "x86_64",
        8,
        2**34,
        ("H100",),
    )
    assert (first.threads, first.direct_queue) == (2, "inference.null.cpu@a/1")
