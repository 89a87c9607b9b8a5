"""A fan-out's members are planned together from one message, each lookup made once."""

from __future__ import annotations

from typing import Any

import pytest

from services.api.submission_request import FanOut, Submission
from services.scheduler import plan_lookups
from services.tasks import scheduler as scheduler_tasks
from shared import queues
from shared.db.states import EvaluationState
from tests.support.pipeline import AGENT, OTHER_AGENT, Outbox, evaluation_row, submit_request


def submit_fan_out(published: list[tuple[str, Any, str | None]]) -> list[str]:
    result = submit_request(
        Submission(
            model="resnet18",
            framework="null",
            settings={"minDurationS": 0.2},
            samples=16,
            fan_out=True,
        ),
        lambda *message: published.append(message),
    )
    assert isinstance(result, FanOut), result
    return [e.id for e in result.evaluations]


def counted(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Count the calls of plan_lookups' ``name``, which still does its real work."""
    calls: list[int] = []
    real = getattr(plan_lookups, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(plan_lookups, name, counting)
    return calls


def test_one_message_plans_every_member_with_one_read_of_each_lookup(
    outbox: Outbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    published: list[tuple[str, Any, str | None]] = []
    members = submit_fan_out(published)
    assert len(members) == 2
    ((task, message, _),) = published  # one plan for the group
    assert task == queues.PLAN_EVALUATION and message.evaluation_id in members
    datasets = counted(monkeypatch, "resolve_dataset")
    agent_reads = counted(monkeypatch, "live_agent_views")
    completeness = counted(monkeypatch, "is_complete")

    scheduler_tasks.plan_evaluation({"evaluation_id": message.evaluation_id})

    rows = [evaluation_row(m) for m in members]
    assert {r.state for r in rows} == {EvaluationState.PREPROCESSING.value}
    assert len(datasets) == 1 and len(agent_reads) == 1
    assert len(completeness) == 2  # 16 samples in shards of 8, the same two for both
    shards = outbox.take(queues.PREPROCESS_SHARD)
    assert sorted((m["evaluation_id"], m["shard_index"]) for m, _ in shards) == sorted(
        (m, i) for m in members for i in (0, 1)
    )
    # Each member is pinned to its own agent, and routed to it.
    assert {r.queue for r in rows} == {
        f"inference.null.cpu@{agent.split('/')[0]}" for agent in (AGENT, OTHER_AGENT)
    }


def test_a_member_planned_already_is_not_planned_again(outbox: Outbox) -> None:
    published: list[tuple[str, Any, str | None]] = []
    members = submit_fan_out(published)
    asked = published[0][1].evaluation_id
    other = next(m for m in members if m != asked)
    # The sweeper re-dispatched the other member first: it planned the whole group.
    scheduler_tasks.plan_evaluation({"evaluation_id": other})
    assert len(outbox.take(queues.PREPROCESS_SHARD)) == 4
    # The group's own message, delivered late, finds its member planned: it resumes that
    # one (its shards are not ready), and leaves the other alone.
    scheduler_tasks.plan_evaluation({"evaluation_id": asked})
    again = outbox.take(queues.PREPROCESS_SHARD)
    assert {m["evaluation_id"] for m, _ in again} == {asked}
