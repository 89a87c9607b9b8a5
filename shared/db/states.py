"""The evaluation state machine.

QUEUED -> PREPROCESSING -> RUNNING -> AGGREGATING -> SUCCEEDED, and from any state that is
not final: FAILED (with a reason) or CANCELLED. One step goes back: RUNNING ->
PREPROCESSING, when the run found a shard gone from the object store (an emptied bucket),
so the shards are prepared again (shared/db/lost_objects.py), as many times as a setting
allows. Transitions are compare-and-set UPDATEs, so
two workers racing (a redelivered message, the last two shards finishing together) cannot
both win: exactly one sees its UPDATE change a row.
"""

from __future__ import annotations

import enum


class EvaluationState(enum.StrEnum):
    QUEUED = "QUEUED"
    PREPROCESSING = "PREPROCESSING"
    RUNNING = "RUNNING"
    AGGREGATING = "AGGREGATING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


FINAL_STATES = frozenset(
    {EvaluationState.SUCCEEDED, EvaluationState.FAILED, EvaluationState.CANCELLED}
)
# The same, as the strings the API and CLI see.
FINAL_STATE_NAMES = frozenset(state.value for state in FINAL_STATES)

_FORWARD: dict[EvaluationState, EvaluationState] = {
    EvaluationState.QUEUED: EvaluationState.PREPROCESSING,
    EvaluationState.PREPROCESSING: EvaluationState.RUNNING,
    EvaluationState.RUNNING: EvaluationState.AGGREGATING,
    EvaluationState.AGGREGATING: EvaluationState.SUCCEEDED,
}

# Work lost downstream is done again upstream: a run whose shards vanished goes back to
# have them prepared (the only backward step).
_BACKWARD: dict[EvaluationState, EvaluationState] = {
    EvaluationState.RUNNING: EvaluationState.PREPROCESSING,
}


def allowed_sources(target: EvaluationState) -> frozenset[EvaluationState]:
    """The states an evaluation may be in to move to ``target``."""
    if target in {EvaluationState.FAILED, EvaluationState.CANCELLED}:
        return frozenset(EvaluationState) - FINAL_STATES
    steps = [*_FORWARD.items(), *_BACKWARD.items()]
    return frozenset(src for src, dst in steps if dst == target)


def can_transition(source: EvaluationState, target: EvaluationState) -> bool:
    return source in allowed_sources(target)
