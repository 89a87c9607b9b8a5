"""A broker restart, noticed and repaired at once rather than when an agent goes idle.

Redis without persistence loses every queued and unacked message when it restarts. The
sweeper finds most of them again after ``stall_seconds``, but it cannot tell a run lost
from the queue of a busy agent from one that merely waits behind that agent's run, so
those waited until the agent went idle (18 minutes in one campaign). The broker says
when it restarted: Redis' ``run_id`` is new at every start. When it changes, every
evaluation not yet final is planned again at once: ``plan`` publishes exactly what each
state waits for (the plan, the shards not ready, a run whose claim is free, the stored
RunCompleted) and nothing for a run being measured, and every step downstream is
idempotent, so a message that survived the restart costs one redundant no-op delivery.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy import or_, select, update

from shared import runtime
from shared.db.evaluations import Evaluation
from shared.db.states import FINAL_STATES, EvaluationState

log = logging.getLogger(__name__)

Publish = Callable[[str], None]  # evaluation id -> EvaluationRequested sent
BrokerIdentity = Callable[[], str]  # changes when the broker restarts

ACTIVE_STATES = frozenset(state.value for state in EvaluationState if state not in FINAL_STATES)


class BrokerWatch:
    """Remembers the broker's identity; ``check`` re-plans everything when it changed."""

    def __init__(self, identity: BrokerIdentity, publish: Publish) -> None:
        self.identity = identity
        self.publish = publish
        self.known: str | None = None

    def check(self) -> list[str]:
        """The evaluations planned again (none unless the broker restarted since the last
        check). The first check only learns the identity; an unreachable broker is left to
        the next check."""
        try:
            current = self.identity()
        except Exception:  # the broker is down: it may come back new; look again next pass
            log.warning("could not ask the broker who it is", exc_info=True)
            return []
        previous, self.known = self.known, current
        if previous is None or previous == current:
            return []
        why = f"the broker restarted (Redis run_id {previous[:8]}… is now {current[:8]}…)"
        return replan_all(self.publish, why)


def replan_all(publish: Publish, why: str) -> list[str]:
    with runtime.db() as session:
        ids = list(
            session.scalars(select(Evaluation.id).where(Evaluation.state.in_(ACTIVE_STATES)))
        )
        if ids:
            # Said only where nothing newer was said: a reason that explains a wait (an
            # agent to come, a constraint) stays.
            session.execute(
                update(Evaluation)
                .where(
                    Evaluation.id.in_(ids),
                    Evaluation.reason == "",
                    # A run being measured lost nothing: its worker holds it.
                    or_(Evaluation.state != EvaluationState.RUNNING.value, Evaluation.attempt == 0),
                )
                .values(reason=f"{why}; re-dispatched")
                .execution_options(synchronize_session=False)
            )
    for evaluation_id in ids:
        publish(evaluation_id)
    log.warning("%s: planned %d evaluation(s) again", why, len(ids))
    return ids
