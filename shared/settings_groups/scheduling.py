"""How the scheduler keeps evaluations moving and shares the agents between users."""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings


class SchedulingSettings(BaseSettings):
    """The scheduler's and the fair shares' fields of ``Settings``."""

    # How often the scheduler's sweeper looks for evaluations that stopped moving, and how
    # long one may sit in a waiting state before it is dispatched again (idempotently).
    sweep_interval_seconds: float = Field(default=10.0, gt=0)
    stall_seconds: float = Field(default=45.0, gt=0)
    # An agent silent this long is gone for good: the sweeper drops its direct queue (and
    # its host's, with no live agent left there) from the broker once empty
    # (services/scheduler/dead_queues.py), so agents that come and go leave no keys behind.
    dead_agent_queue_seconds: float = Field(default=600.0, gt=0)
    # Dispatches of one evaluation by the sweeper before it is failed instead of looped.
    max_dispatches: int = Field(default=3, ge=1, le=100)
    # Fair shares. At submission (services/api/user_quota.py): the most evaluations one
    # user may have QUEUED, and the most agent-seconds all their unfinished evaluations
    # may hold, each counted at its longest possible run (max_duration_s plus the setup
    # allowance, else max_run_seconds). At dispatch (services/scheduler/fair_order.py): the
    # most one user may have preprocessing or running at once. 0: no limit.
    user_max_queued: int = Field(default=1000, ge=0)
    user_max_agent_seconds: float = Field(default=1000 * 3600.0, ge=0)
    user_max_running: int = Field(default=0, ge=0)
    # Per-user exceptions by user name, e.g. {"ci": {"user_max_queued": 0}} (JSON in
    # BENCHSTACK_USER_LIMIT_OVERRIDES): there are no admin roles, the operator grants them.
    user_limit_overrides: dict[str, dict[str, float]] = Field(default_factory=dict)
    # Tries of one run whose shards vanished from the object store (an emptied bucket):
    # each sends the evaluation back to have them prepared again; the last fails it,
    # naming the object (shared/db/lost_objects.py).
    lost_object_tries: int = Field(default=3, ge=1, le=20)

    @model_validator(mode="after")
    def _known_user_limits(self) -> Self:
        known = {"user_max_queued", "user_max_agent_seconds", "user_max_running"}
        for user, limits in self.user_limit_overrides.items():
            if bad := sorted(k for k, v in limits.items() if k not in known or v < 0):
                raise ValueError(
                    f"user_limit_overrides[{user!r}]: {bad} not accepted; accepted: "
                    f"{sorted(known)}, each 0 (no limit) or more"
                )
        return self
