"""A run that found its shards gone from the object store (an emptied bucket, a deleted
key) sends its evaluation back to have them prepared again, as a lost message is
delivered again: RUNNING -> PREPROCESSING (the state machine's one backward step) with
every shard to be checked again, for ``lost_object_tries`` tries; the last one fails the
evaluation, naming the object.

The preprocess workers skip each shard that is still whole (content-addressed), prepare
the rest (re-creating the bucket if it went too, ``S3Store._call``), and the last one
moves the evaluation to RUNNING again and publishes its RunInference, as at the first
plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.orm import Session

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
            f"inference: {missing} at each of {this_try} tries (lost_object_tries "
            f"{tries}); its shards were prepared again {row.replans} times"
        )
        if fail_attempt(session, evaluation_id, attempt, reason):
            return SentBack(failed=True, reason=reason)
        return None
    reason = f"{missing}; prepared again (try {this_try + 1} of {tries})"
    moved = transition(
        session,
        evaluation_id,
        EvaluationState.PREPROCESSING,
        reason=reason,
        sources=frozenset({EvaluationState.RUNNING}),
        # Only the attempt that found it missing, once: a second delivery counts nothing.
        where=[Evaluation.attempt == attempt, Evaluation.replans == row.replans],
        replans=this_try,
        shards_ready=0,
        preprocess_reused=False,
        # The next RunInference claims the next attempt at once.
        claimed_at=None,
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
