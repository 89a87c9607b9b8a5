"""Cancelling an evaluation, or a whole group of them, on its owner's behalf (GraphQL
``cancelEvaluation`` and ``cancelGroup``)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.api.rejections import Rejection
from shared.db import evaluation_repo
from shared.db.evaluations import Evaluation
from shared.db.states import FINAL_STATES, EvaluationState


def _already_finished(row: Evaluation) -> Rejection:
    return Rejection(
        "AlreadyFinished", f"id: evaluation is already {row.state}", field="id", state=row.state
    )


def cancel_evaluation(
    session: Session, *, owner_id: int, evaluation_id: str
) -> Evaluation | Rejection:
    """Move the owner's evaluation to CANCELLED and commit; the measuring worker sees it
    within its cancel poll and ends the run. Another user's evaluation answers as a
    missing one."""
    row = session.get(Evaluation, evaluation_id)
    if row is None or row.owner_id != owner_id:
        return Rejection("NotFound", f"id: no evaluation {evaluation_id!r}", field="id")
    if EvaluationState(row.state) in FINAL_STATES:
        return _already_finished(row)
    cancelled = evaluation_repo.transition(
        session, evaluation_id, EvaluationState.CANCELLED, reason="cancelled by its owner"
    )
    session.commit()
    session.refresh(row)
    if not cancelled:
        # A worker moved it to a final state between the read and the compare-and-set.
        return _already_finished(row)
    return row


# What every member of a cancelled group records (campaigns/groups.stopped_reason reads it),
# so a group kind that submits its next member after a run (find-peak's probes) stops.
GROUP_CANCELLED = "cancelled by its owner"
# A group holds at most this many members (sweeps and fan-outs are bounded below it).
MAX_GROUP_MEMBERS = 10_000


@dataclass(frozen=True)
class GroupCancellation:
    group_id: str
    cancelled: list[str]  # the member ids moved to CANCELLED now
    already_finished: list[str]  # members that had ended before


def cancel_group(
    session: Session, *, owner_id: int, group_id: str
) -> GroupCancellation | Rejection:
    """Cancel every unfinished member of the owner's group (a fan-out, sweep, find-peak,
    repeats, pair, training scaling, bricks) and mark the group stopped, so none submits a
    further member. Another user's group answers as a missing one."""
    members = list(
        session.scalars(
            select(Evaluation)
            .where(Evaluation.group_id == group_id, Evaluation.owner_id == owner_id)
            .order_by(Evaluation.created_at)
            .limit(MAX_GROUP_MEMBERS)
        )
    )
    if not members:
        return Rejection("NotFound", f"groupId: no group {group_id!r}", field="groupId")
    for member in members:
        member.group_info = {**(member.group_info or {}), "stopped": GROUP_CANCELLED}
    session.commit()
    cancelled: list[str] = []
    finished: list[str] = []
    for member in members:
        if EvaluationState(member.state) in FINAL_STATES:
            finished.append(member.id)
            continue
        moved = evaluation_repo.transition(
            session, member.id, EvaluationState.CANCELLED, reason=f"{GROUP_CANCELLED} (group)"
        )
        (cancelled if moved else finished).append(member.id)
    session.commit()
    return GroupCancellation(group_id, cancelled, finished)
