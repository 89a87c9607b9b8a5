"""Objects lost from the object store (an emptied bucket, a deleted key) are work to do
again, as a lost message is delivered again; the state machine's backward steps
(shared/db/states.py), for ``lost_object_tries`` tries in all, counted in
``evaluations.replans``; the try that finds one gone after that fails the evaluation,
naming the object.

- ``send_back``: a run found a shard gone: RUNNING -> PREPROCESSING with every shard to
  be checked again. The preprocess workers skip each shard still whole
  (content-addressed), prepare the rest (re-creating the bucket if it went too,
  ``S3Store._call``), and the last one moves the evaluation to RUNNING again and
  publishes its RunInference, as at the first plan.
- ``measure_again``: the measurement an AGGREGATING evaluation's run stored is gone:
  AGGREGATING -> RUNNING with the claim free, so the next RunInference measures it again
  under the next attempt.

And a run whose measurement process died (killed, crashed) is measured again like one
whose worker died (``retry_died``), counted in the sweeper's ``dispatches`` and failed
past ``max_dispatches``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, select, update
from sqlalchemy.orm import Session

from shared.db.clock import utcnow
from shared.db.evaluation_repo import fail_attempt, transition
from shared.db.evaluations import Evaluation, Shard
from shared.db.states import EvaluationState


@dataclass(frozen=True)
class SentBack:
    """What became of the evaluation: ``failed`` (past the tries) or sent back; the
    reason it now shows."""

    failed: bool
    reason: str


def send_back(
    session: Session, evaluation_id: str, attempt: int, lost_key: str, *, tries: int
) -> SentBack | None:
    """Send the evaluation back to PREPROCESSING for the run ``attempt`` that found
    ``lost_key`` gone, or fail it once ``tries`` runs did; None when that attempt no
    longer holds it (cancelled, failed, or taken over meanwhile)."""
    row = session.execute(
        select(Evaluation.replans, Evaluation.shards_total).where(Evaluation.id == evaluation_id)
    ).one_or_none()
    if row is None:
        return None
    missing = f"{lost_key} was missing from the object store"
    this_try = int(row.replans) + 1
    if this_try >= tries or not row.shards_total:
        # A run without shards has nothing to prepare again (no workload's does today).
        reason = (
            _given_up("inference", missing, this_try, tries)
            if row.shards_total
            else f"inference: {missing}"
        )
        if fail_attempt(session, evaluation_id, attempt, reason):
            return SentBack(failed=True, reason=reason)
        return None
    reason = f"{missing}; prepared again (try {this_try + 1} of {tries})"
    moved = _step_back(
        session,
        evaluation_id,
        EvaluationState.PREPROCESSING,
        # Only the attempt that found it missing, once: a second delivery counts nothing.
        where=[Evaluation.attempt == attempt, Evaluation.replans == row.replans],
        reason=reason,
        replans=this_try,
        shards_ready=0,
        preprocess_reused=False,
    )
    if not moved:
        return None
    session.execute(
        update(Shard)
        .where(Shard.evaluation_id == evaluation_id)
        .values(ready=False)
        .execution_options(synchronize_session=False)
    )
    return SentBack(failed=False, reason=reason)


def measure_again(
    session: Session, evaluation: Evaluation, lost_key: str, *, tries: int, who: str
) -> SentBack | None:
    """AGGREGATING -> RUNNING for an evaluation whose stored measurement (``lost_key``) is
    gone, or FAILED once ``tries`` tries lost an object; ``who`` names the stage that
    found it. None when it left AGGREGATING meanwhile. The caller publishes the run."""
    missing = f"{lost_key} was missing from the object store"
    this_try = evaluation.replans + 1
    if this_try >= tries:
        reason = _given_up(who, missing, this_try, tries)
        failed = transition(
            session,
            evaluation.id,
            EvaluationState.FAILED,
            reason=reason,
            sources=frozenset({EvaluationState.AGGREGATING}),
        )
        return SentBack(failed=True, reason=reason) if failed else None
    reason = f"{missing}; measured again (try {this_try + 1} of {tries})"
    moved = _step_back(
        session,
        evaluation.id,
        EvaluationState.RUNNING,
        where=[Evaluation.replans == evaluation.replans],
        reason=reason,
        replans=this_try,
    )
    return SentBack(failed=False, reason=reason) if moved else None


def _given_up(who: str, missing: str, this_try: int, tries: int) -> str:
    return (
        f"{who}: {missing}; an object it needs was lost at each of {this_try} tries "
        f"(lost_object_tries {tries}), so it is failed rather than looped"
    )


def _step_back(
    session: Session,
    evaluation_id: str,
    target: EvaluationState,
    *,
    where: list[ColumnElement[bool]],
    reason: str,
    **values: Any,
) -> bool:
    """The backward step to ``target``, its claim released: the next RunInference claims
    the next attempt at once."""
    return transition(
        session,
        evaluation_id,
        target,
        reason=reason,
        back=True,
        where=where,
        claimed_at=None,
        **values,
    )


def retry_died(
    session: Session, evaluation_id: str, attempt: int, what: str, *, max_dispatches: int
) -> SentBack | None:
    """The run ``attempt`` lost its measurement process (``what`` happened to it): the
    claim released and the dispatch counted, for the caller to publish the run again; or
    FAILED once the evaluation was dispatched ``max_dispatches`` times. None when that
    attempt no longer holds it."""
    row = session.execute(
        select(Evaluation.dispatches).where(Evaluation.id == evaluation_id)
    ).one_or_none()
    if row is None:
        return None
    if row.dispatches >= max_dispatches:
        reason = (
            f"inference: {what}; dispatched again {max_dispatches} times without "
            "progress, so it is failed rather than looped"
        )
        failed = fail_attempt(session, evaluation_id, attempt, reason)
        return SentBack(failed=True, reason=reason) if failed else None
    reason = (
        f"inference: {what}; measured again (dispatch {row.dispatches + 1} of {max_dispatches})"
    )
    result = session.execute(
        update(Evaluation)
        .where(
            Evaluation.id == evaluation_id,
            Evaluation.state == EvaluationState.RUNNING.value,
            Evaluation.attempt == attempt,
            Evaluation.dispatches == row.dispatches,
        )
        .values(dispatches=row.dispatches + 1, claimed_at=None, reason=reason, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return SentBack(failed=False, reason=reason) if result.rowcount else None  # type: ignore[attr-defined]
