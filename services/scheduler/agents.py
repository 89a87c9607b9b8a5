"""Database-facing side of agent matching, shared by the API and the scheduler task."""

from __future__ import annotations

from sqlalchemy.orm import Session

from services.scheduler.planner import AgentChoice, AgentView, Requirement, UnmetConstraint
from services.scheduler.planner import match_agent as _match
from shared.db import evaluation_repo
from shared.settings import Settings


def live_agent_views(session: Session, settings: Settings) -> list[AgentView]:
    within = settings.agent_heartbeat_seconds * settings.agent_live_heartbeats
    return [
        AgentView(
            id=a.id,
            hostname=a.hostname,
            queue=a.queue,
            framework=a.framework,
            framework_version=a.framework_version,
            device=a.device,
        )
        for a in evaluation_repo.live_agents(session, within_s=within)
    ]


def find_agent(
    session: Session, settings: Settings, need: Requirement
) -> AgentChoice | UnmetConstraint:
    return _match(live_agent_views(session, settings), need)
