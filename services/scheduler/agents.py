"""Database-facing side of agent matching, shared by the API and the scheduler."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.core.constraints import requirement, stored_terms
from services.inference.backends.base import backend_names
from services.scheduler.planner import AgentChoice, AgentView, Requirement, UnmetConstraint
from services.scheduler.planner import match_agent as _match
from shared.db import liveness
from shared.db.clock import utcnow
from shared.db.evaluations import Agent, Evaluation
from shared.settings import Settings

# The columns routing reads: a plan reads every live agent, so it loads these alone, not
# ORM entities (with 200 agents the entities cost about 3x the columns: benchmarks/scale.py).
VIEW_COLUMNS = (
    Agent.id,
    Agent.hostname,
    Agent.queue,
    Agent.framework,
    Agent.framework_version,
    Agent.device,
    Agent.hardware,
    Agent.settings,
    Agent.direct_queue,
)


def agent_view(row: Any) -> AgentView:
    """The routing view of an agent (a row of VIEW_COLUMNS, or an ``Agent``); hardware
    and settings are what it advertised."""
    hardware: dict[str, Any] = row.hardware or {}
    settings: dict[str, Any] = row.settings or {}
    cpu: dict[str, Any] = hardware.get("cpu") or {}
    return AgentView(
        id=row.id,
        hostname=row.hostname,
        queue=row.queue,
        framework=row.framework,
        framework_version=row.framework_version,
        device=row.device,
        arch=str(cpu.get("architecture") or ""),
        gpus=tuple(str(g.get("name", "")) for g in hardware.get("gpus") or []),
        memory_bytes=int(hardware.get("memory_bytes") or 0),
        logical_cores=int(cpu.get("logical_cores") or 0),
        threads=int(settings.get("intra_op_threads") or 0),
        direct_queue=row.direct_queue or "",
    )


def live_agent_views(session: Session, settings: Settings) -> list[AgentView]:
    """Every live agent, the most recent heartbeat first (as ``live_agents`` orders them)."""
    cutoff = utcnow() - timedelta(seconds=liveness.live_within_s(session, settings))
    rows = session.execute(
        select(*VIEW_COLUMNS)
        .where(Agent.last_heartbeat >= cutoff, Agent.stopped_at.is_(None))
        .order_by(Agent.last_heartbeat.desc())
    )
    return [agent_view(row) for row in rows]


def find_agent(
    session: Session, settings: Settings, need: Requirement
) -> AgentChoice | UnmetConstraint:
    return _match(live_agent_views(session, settings), need)


def requirement_for(evaluation: Evaluation) -> Requirement:
    """What the API checked at submission, checked again now (agents come and go)."""
    framework = evaluation.manifest["framework"]
    return requirement(
        framework=evaluation.framework,
        device=evaluation.device,
        texts=stored_terms(evaluation.constraints or {}, evaluation.framework),
        frameworks=backend_names(),
        manifest_framework=framework["name"],
        manifest_version=framework.get("version", ""),
        manifest_ref=f"{evaluation.model_name}:{evaluation.model_version}",
    )
