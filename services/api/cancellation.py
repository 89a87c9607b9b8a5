"""Cancelling an evaluation on its owner's behalf (GraphQL ``cancelEvaluation``)."""

from __future__ import annotations

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
