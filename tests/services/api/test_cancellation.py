"""cancel_evaluation: the owner's evaluation moves to CANCELLED; else a typed refusal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.api import cancellation
from services.api.auth import get_or_create_user
from services.api.cancellation import cancel_evaluation
from services.api.rejections import Rejection
from shared import runtime
from shared.db import evaluation_repo
from shared.db.evaluations import Evaluation
from shared.db.states import EvaluationState
from tests.support.rows import evaluation_row


@pytest.fixture(autouse=True)
def embedded_db(data_dir: Path) -> Iterator[None]:
    runtime.reset()
    yield
    runtime.reset()


def _queued(owner: str) -> tuple[int, str]:
    with runtime.db() as session:
        user = get_or_create_user(session, owner)
        session.flush()
        row = evaluation_row(user.id)
        session.add(row)
        return user.id, row.id


def test_the_owner_cancels_and_a_second_cancel_is_already_finished() -> None:
    owner, evaluation_id = _queued("alice")
    with runtime.db() as session:
        cancelled = cancel_evaluation(session, owner_id=owner, evaluation_id=evaluation_id)
        assert isinstance(cancelled, Evaluation)
        assert cancelled.state == EvaluationState.CANCELLED.value
        assert cancelled.reason == "cancelled by its owner"
    with runtime.db() as session:
        again = cancel_evaluation(session, owner_id=owner, evaluation_id=evaluation_id)
    assert again == Rejection(
        "AlreadyFinished", "id: evaluation is already CANCELLED", field="id", state="CANCELLED"
    )


def test_another_users_evaluation_is_not_found() -> None:
    _, evaluation_id = _queued("alice")
    mallory, _ = _queued("mallory")
    with runtime.db() as session:
        refused = cancel_evaluation(session, owner_id=mallory, evaluation_id=evaluation_id)
        assert isinstance(refused, Rejection)
        assert (refused.kind, refused.field) == ("NotFound", "id")
        assert evaluation_repo.is_final(session, evaluation_id) is False


def test_a_cancel_that_loses_the_race_reports_already_finished(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    owner, evaluation_id = _queued("alice")
    real_transition = evaluation_repo.transition

    def finishes_first(session: Any, eid: str, target: EvaluationState, **kw: Any) -> bool:
        # The evaluation fails in another worker between the API's read and its CAS.
        with runtime.db() as other:
            real_transition(other, eid, EvaluationState.FAILED, reason="worker failed")
        return real_transition(session, eid, target, **kw)

    monkeypatch.setattr(cancellation.evaluation_repo, "transition", finishes_first)
    with runtime.db() as session:
        result = cancel_evaluation(session, owner_id=owner, evaluation_id=evaluation_id)
    assert isinstance(result, Rejection)
    assert (result.kind, result.state) == ("AlreadyFinished", "FAILED")
    with runtime.db() as session:
        assert evaluation_repo.state_of(session, evaluation_id) == EvaluationState.FAILED


def _group(owner: str, states: list[EvaluationState]) -> tuple[int, str, list[str]]:
    group_id = f"group-{owner}"
    with runtime.db() as session:
        user = get_or_create_user(session, owner)
        session.flush()
        ids = []
        for state in states:
            row = evaluation_row(
                user.id, group_id=group_id, group_info={"kind": "sweep"}, state=state.value
            )
            session.add(row)
            ids.append(row.id)
        return user.id, group_id, ids


def test_a_group_is_cancelled_whole_and_marked_stopped() -> None:
    from services.api.campaigns.groups import stopped_reason
    from services.api.cancellation import GROUP_CANCELLED, cancel_group

    owner, group_id, (first, second, done) = _group(
        "alice", [EvaluationState.QUEUED, EvaluationState.RUNNING, EvaluationState.SUCCEEDED]
    )
    with runtime.db() as session:
        found = cancel_group(session, owner_id=owner, group_id=group_id)
        assert not isinstance(found, Rejection)
        assert sorted(found.cancelled) == sorted([first, second])
        assert found.already_finished == [done]
        rows = [session.get(Evaluation, i) for i in (first, second, done)]
        assert [r.state for r in rows if r] == ["CANCELLED", "CANCELLED", "SUCCEEDED"]
        assert stopped_reason([(r, None) for r in rows if r]) == GROUP_CANCELLED
    with runtime.db() as session:
        again = cancel_group(session, owner_id=owner, group_id=group_id)
        assert not isinstance(again, Rejection) and again.cancelled == []


def test_another_users_group_is_not_found() -> None:
    from services.api.cancellation import cancel_group

    _, group_id, ids = _group("alice", [EvaluationState.QUEUED])
    mallory, _ = _queued("mallory")
    with runtime.db() as session:
        refused = cancel_group(session, owner_id=mallory, group_id=group_id)
        assert isinstance(refused, Rejection)
        assert (refused.kind, refused.field) == ("NotFound", "groupId")
        assert evaluation_repo.is_final(session, ids[0]) is False
