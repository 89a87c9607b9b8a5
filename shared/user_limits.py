"""One user's limits on the work they hold: the deployment's settings, with the operator's
per-user overrides (``user_limit_overrides``; there are no admin roles). Read by the API
at submission (services/api/user_quota.py) and by the scheduler at dispatch
(services/scheduler/fair_order.py)."""

from __future__ import annotations

from dataclasses import dataclass

from shared.settings import Settings


@dataclass(frozen=True)
class UserLimits:
    """One user's limits; 0: none."""

    queued: int
    agent_seconds: float
    running: int


def limits_for(settings: Settings, user_name: str) -> UserLimits:
    own = settings.user_limit_overrides.get(user_name, {})
    return UserLimits(
        queued=int(own.get("user_max_queued", settings.user_max_queued)),
        agent_seconds=float(own.get("user_max_agent_seconds", settings.user_max_agent_seconds)),
        running=int(own.get("user_max_running", settings.user_max_running)),
    )
