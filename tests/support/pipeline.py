"""The pipeline's Celery tasks driven in process over the embedded stores (SQLite and a
local folder), with a worker context whose publisher records messages and can "kill the
worker" between a task's commit and its publish. Used by the redelivery and sweeper tests."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from services.api.auth import get_or_create_user
from services.api.group_steps import group_steps
from services.api.rejections import Rejection
from services.api.submission import submit
from services.api.submission_request import FanOut, Submission
from services.core.messages import Message
from services.tasks import preprocess as preprocess_tasks
from services.tasks import scheduler as scheduler_tasks
from shared import queues, runtime, worker_context
from shared.celery_app import Publisher
from shared.db import evaluation_repo, worker_repo
from shared.db.evaluations import Evaluation
from shared.db.models import Run

WORKER_KINDS = ("scheduler", "preprocess", "aggregator")
AGENT = "host/inference.null.cpu/1"
OTHER_AGENT = "elsewhere/inference.null.cpu/7"


class WorkerDied(BaseException):
    """A worker killed between its commit and its publish: nothing after runs, and the
    task guard (which catches Exception) does not see it."""


@dataclass
class Outbox:
    """Records published messages; the first ``lose`` sends die instead."""

    lose: int = 0
    sent: list[tuple[str, dict[str, Any], str | None]] = field(default_factory=list)

    def __call__(self, task: str, message: Message, queue: str | None) -> None:
        if self.lose:
            self.lose -= 1
            raise WorkerDied(task)
        self.sent.append((task, message.to_json(), queue))

    def take(self, task: str) -> list[tuple[dict[str, Any], str | None]]:
        taken = [(m, q) for t, m, q in self.sent if t == task]
        self.sent = [s for s in self.sent if s[0] != task]
        return taken


def outbox_fixture(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Outbox]:
    """The body of the ``outbox`` fixture (tests/services/scheduler/conftest.py)."""
    monkeypatch.setenv("BENCHSTACK_SHARD_SAMPLES", "8")
    monkeypatch.setenv("BENCHSTACK_ENVIRONMENT", "test")
    runtime.reset()
    with runtime.db() as session:
        for agent_id in (AGENT, OTHER_AGENT):
            host, queue, _ = agent_id.split("/")
            evaluation_repo.upsert_agent(
                session,
                agent_id=agent_id,
                hostname=host,
                queue=queue,
                framework="null",
                framework_version="0.1.0",
                device="cpu",
                hardware={},
                software={},
            )
        # Live workers of every other kind, as a running stack has (the sweeper sends work
        # only where someone can take it).
        for kind in WORKER_KINDS:
            worker_repo.register(
                session, worker_id=f"{kind}@host/1", kind=kind, node=f"{kind}@host",
                hostname="host", pid=1,
            )  # fmt: skip
    box = Outbox()
    # What a worker's launcher installs: the publisher, and this worker as agent AGENT.
    previous = worker_context.install(
        worker_context.WorkerContext(
            box, worker_context.AgentIdentity(ids={"null": AGENT}), group_steps()
        )
    )
    try:
        yield box
    finally:
        worker_context.uninstall(previous)
        runtime.reset()


def submit_request(
    request: Submission, publish: Publisher | None = None
) -> Evaluation | FanOut | Rejection:
    """``submit`` as the API calls it, by one user, over the embedded stores; what the
    API would publish goes to ``publish`` (dropped when None)."""
    with runtime.db() as session:
        owner = get_or_create_user(session, "redelivery")
        session.flush()
        return submit(
            session,
            runtime.settings(),
            publish or (lambda *_: None),
            owner_id=owner.id,
            request=request,
        )


def submit_quick(seed: int = 7) -> str:
    result = submit_request(
        Submission(
            model="resnet18",
            framework="null",
            settings={"minDurationS": 0.2, "targetQps": 2000},
            samples=16,
            seed=seed,
        )
    )
    assert isinstance(result, Evaluation), result
    return str(result.id)


def evaluation_row(evaluation_id: str) -> Evaluation:
    with runtime.db() as session:
        row = session.get(Evaluation, evaluation_id)
        assert row is not None
        return row


def runs_of(evaluation_id: str) -> int:
    with runtime.db() as session:
        return int(
            session.scalar(
                select(func.count()).select_from(Run).where(Run.evaluation_id == evaluation_id)
            )
            or 0
        )


def to_running(outbox: Outbox, evaluation_id: str) -> dict[str, Any]:
    """Plan and preprocess without losses; returns the RunInference payload."""
    scheduler_tasks.plan_evaluation({"evaluation_id": evaluation_id})
    for shard, _ in outbox.take(queues.PREPROCESS_SHARD):
        preprocess_tasks.preprocess_shard(shard)
    ((run, _),) = outbox.take(queues.RUN_INFERENCE)
    return run
