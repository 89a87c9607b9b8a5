"""The evaluation state machine.

QUEUED -> PREPROCESSING -> RUNNING -> AGGREGATING -> SUCCEEDED, and from any state that is
not final: FAILED (with a reason) or CANCELLED. Two steps go back, taken only when asked
for by name (``back=True``): RUNNING -> PREPROCESSING when the run found a shard gone from
the object store (an emptied bucket), so the shards are prepared again, and AGGREGATING
-> RUNNING when the stored measurement is gone, so the run is measured again
(shared/db/lost_objects.py), as many times as a setting allows. Transitions are
compare-and-set UPDATEs, so two workers racing (a redelivered message, the last two shards
finishing together) cannot both win: exactly one sees its UPDATE change a row.
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
# have them prepared, an outcome that vanished is measured again. Never implied: a
# redelivered "shard ready" must not move an AGGREGATING evaluation back to RUNNING.
_BACKWARD: dict[EvaluationState, EvaluationState] = {
    EvaluationState.RUNNING: EvaluationState.PREPROCESSING,
    EvaluationState.AGGREGATING: EvaluationState.RUNNING,
}


def allowed_sources(target: EvaluationState, *, back: bool = False) -> frozenset[EvaluationState]:
    """The states an evaluation may be in to move to ``target``; ``back``: by a backward
    step (work lost downstream, done again), and only by one."""
    if back:
        return frozenset(src for src, dst in _BACKWARD.items() if dst == target)
    if target in {EvaluationState.FAILED, EvaluationState.CANCELLED}:
        return frozenset(EvaluationState) - FINAL_STATES
    return frozenset(src for src, dst in _FORWARD.items() if dst == target)


def can_transition(source: EvaluationState, target: EvaluationState, *, back: bool = False) -> bool:
    return source in allowed_sources(target, back=back)
