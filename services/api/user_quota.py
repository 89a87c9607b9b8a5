"""Per-user limits on the work one user may hold, checked before anything is stored.

One user could queue 100 runs of 3,000 s (83 agent-hours) in 9 s. At submission a user
may have at most ``user_max_queued`` evaluations QUEUED, and their unfinished evaluations
may hold agents for at most ``user_max_agent_seconds``, each counted at its longest
possible run (``run_bound_s``). A campaign (repeats, a sweep, a pair) is counted whole
before its first member is stored (``campaign_problem``). The user's row is locked while
counting, so two submissions of one user at once are counted one after the other (on
PostgreSQL; SQLite serialises writers anyway). There are no admin roles: the operator
raises or lifts a user's limits by name in ``user_limit_overrides``. How users share the
agents once their work is accepted is services/scheduler/fair_order.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.api.rejections import Rejection
from services.api.submission_checks import scenario_config, setup_allowance_s
from services.api.submission_request import Submission
from services.workloads import workloads
from shared.db.accounts import User
from shared.db.evaluations import Evaluation
from shared.db.states import FINAL_STATE_NAMES, EvaluationState
from shared.settings import Settings
from shared.user_limits import limits_for


def run_bound_s(scenario: dict[str, Any], workload: str, max_run_seconds: float) -> float:
    """The longest one evaluation can hold an agent: a LoadGen run with max_duration_s
    ends by then plus the setup allowance; anything else is ended at MAX_RUN_SECONDS."""
    longest = scenario.get("max_duration_s")
    kind = workloads().get(workload)
    if kind is None or not kind.runs_scenario or not isinstance(longest, int | float):
        return max_run_seconds
    return min(max_run_seconds, float(longest) + setup_allowance_s(max_run_seconds))


@dataclass(frozen=True)
class Usage:
    queued: int
    agent_seconds: float


def usage(session: Session, owner_id: int, max_run_seconds: float) -> Usage:
    """What the user's unfinished evaluations hold now."""
    rows = session.execute(
        select(Evaluation.state, Evaluation.scenario, Evaluation.workload).where(
            Evaluation.owner_id == owner_id, Evaluation.state.notin_(FINAL_STATE_NAMES)
        )
    ).all()
    queued = sum(1 for row in rows if row.state == EvaluationState.QUEUED.value)
    seconds = sum(run_bound_s(row.scenario or {}, row.workload, max_run_seconds) for row in rows)
    return Usage(queued=queued, agent_seconds=seconds)


def quota_problem(
    session: Session, settings: Settings, owner_id: int, adds: Sequence[float]
) -> Rejection | None:
    """A refusal when storing evaluations of these run bounds (``adds``, one per
    evaluation) would take the user past a limit, naming the limit, the user's figure
    and the setting; None when they fit."""
    user = session.get(User, owner_id, with_for_update=True)
    if user is None or not adds:
        return None
    limits = limits_for(settings, user.name)
    used = usage(session, owner_id, settings.max_run_seconds)
    if limits.queued and used.queued + len(adds) > limits.queued:
        return _refusal(
            "user_max_queued",
            f"{user.name} has {used.queued} evaluation(s) QUEUED and this submission adds "
            f"{len(adds)}; the limit is {limits.queued}",
            f"at most {max(limits.queued - used.queued, 0)} more now",
        )
    added = sum(adds)
    if limits.agent_seconds and used.agent_seconds + added > limits.agent_seconds:
        return _refusal(
            "user_max_agent_seconds",
            f"{user.name}'s unfinished evaluations may hold agents for {used.agent_seconds:g} s "
            f"and this submission adds {added:g} s ({len(adds)} run(s), each counted at its "
            f"longest); the limit is {limits.agent_seconds:g} s",
            f"at most {max(limits.agent_seconds - used.agent_seconds, 0):g} s more now",
        )
    return None


def campaign_problem(
    session: Session, settings: Settings, owner_id: int, requests: Sequence[Submission]
) -> Rejection | None:
    """``quota_problem`` for every member of a campaign at once, before any is stored. A
    fan-out counts as one here (its agents are matched later); a gang as its ranks. A
    request whose settings are refused counts at MAX_RUN_SECONDS: its own check refuses it."""
    adds: list[float] = []
    for request in requests:
        scenario = scenario_config(request)
        bound = (
            settings.max_run_seconds
            if isinstance(scenario, Rejection)
            else run_bound_s(scenario.model_dump(), request.workload, settings.max_run_seconds)
        )
        adds.extend([bound] * (request.gang_size or 1))
    return quota_problem(session, settings, owner_id, adds)


def _refusal(setting: str, figures: str, accepted: str) -> Rejection:
    return Rejection(
        "LimitExceeded",
        f"{setting}: {figures} (BENCHSTACK_{setting.upper()}, or a per-user override in "
        "BENCHSTACK_USER_LIMIT_OVERRIDES); wait for some to finish or cancel some",
        field=setting,
        accepted=[accepted],
    )
