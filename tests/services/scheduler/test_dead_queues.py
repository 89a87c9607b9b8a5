"""Queues of dead agents leave the broker: a dead agent's direct queue and its host's
(unless a live agent still consumes that one) are deleted once empty, each once; one
holding a message is kept. Against the real Redis broker."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
import redis
from sqlalchemy import update

from services.core.messages import EvaluationRequested
from services.scheduler.dead_queues import clean_once
from shared import queues, runtime
from shared.celery_app import drop_queue, make_celery, send
from shared.db import evaluation_repo
from shared.db.clock import utcnow
from shared.db.evaluations import Agent
from shared.settings import Settings
from tests.support.consumer_queues import declare_as_consumer

QUEUE = "inference.null.cpu"
BASE = os.environ.get("BENCHSTACK_TEST_REDIS", "redis://127.0.0.1:6379")
DB = int(os.environ.get("BENCHSTACK_TEST_REDIS_DB", "11"))


@pytest.fixture
def broker() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(f"{BASE}/{DB}")
    try:
        client.ping()
    except redis.ConnectionError as exc:
        if os.environ.get("BENCHSTACK_REQUIRE_SERVERS") == "1":
            raise
        pytest.skip(f"no Redis: {exc}")
    yield client
    client.close()


def _agent(host: str, pid: int, *, silent_s: float) -> tuple[str, str]:
    agent_id = f"{host}/{QUEUE}/{pid}"
    direct = queues.direct_queue(QUEUE, host, pid)
    with runtime.db() as session:
        evaluation_repo.upsert_agent(
            session,
            agent_id=agent_id,
            hostname=host,
            queue=QUEUE,
            framework="null",
            framework_version="1",
            device="cpu",
            hardware={},
            software={},
            settings={},
            direct_queue=direct,
        )
        session.execute(
            update(Agent)
            .where(Agent.id == agent_id)
            .values(last_heartbeat=utcnow() - timedelta(seconds=silent_s))
        )
    return agent_id, direct


def _direct_queue_of(agent_id: str) -> str:
    with runtime.db() as session:
        agent = session.get(Agent, agent_id)
        assert agent is not None
        return agent.direct_queue


def test_dead_agents_queues_go_once_empty_and_a_live_hosts_stays(
    settings: Settings, broker: redis.Redis
) -> None:
    app = make_celery(Settings(broker_url=f"{BASE}/{DB}"))
    tag = uuid.uuid4().hex[:8]
    dead = settings.dead_agent_queue_seconds * 2
    a, a_direct = _agent(f"h1-{tag}", 11, silent_s=dead)
    _agent(f"h2-{tag}", 21, silent_s=0)  # live, on h2
    c, c_direct = _agent(f"h2-{tag}", 22, silent_s=dead)
    d, d_direct = _agent(f"h3-{tag}", 31, silent_s=dead)
    h1, h2, h3 = (queues.host_queue(QUEUE, f"h{n}-{tag}") for n in (1, 2, 3))
    names = [a_direct, c_direct, d_direct, h1, h2, h3]
    bindings = {name: f"_kombu.binding.{name}" for name in names}
    try:
        for name in names:
            declare_as_consumer(app, name)  # each agent declared what it reads
            send(app, queues.PLAN_EVALUATION, EvaluationRequested(evaluation_id="e"), queue=name)
        broker.delete(*[name for name in names if name != d_direct])  # taken by the agents
        assert all(broker.exists(key) for key in bindings.values())

        assert clean_once(settings, lambda q: drop_queue(app, q)) == 3  # a's two, c's direct
        gone = {name for name, key in bindings.items() if not broker.exists(key)}
        assert gone == {a_direct, h1, c_direct}  # h2 has a live agent; d's holds a message
        assert broker.llen(d_direct) == 1
        assert (_direct_queue_of(a), _direct_queue_of(c), _direct_queue_of(d)) == (
            "",
            "",
            d_direct,
        )
        assert clean_once(settings, lambda q: drop_queue(app, q)) == 0  # each dropped once

        broker.delete(d_direct)  # its message taken at last
        assert clean_once(settings, lambda q: drop_queue(app, q)) == 2
        assert not broker.exists(bindings[d_direct]) and not broker.exists(bindings[h3])
    finally:
        broker.delete(*names, *bindings.values())
        broker.delete(*[f"_kombu.binding_permanent.{name}" for name in names])
