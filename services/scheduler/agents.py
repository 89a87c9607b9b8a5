"""Database-facing side of agent matching, shared by the API and the scheduler."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.core.constraints import requirement, stored_terms
from services.inference.backends.registry import backend_names
from services.scheduler.planner import AgentChoice, AgentView, Requirement, UnmetConstraint
from services.scheduler.planner import match_agent as _match
from shared.db import liveness
from shared.db.clock import utcnow
from shared.db.evaluations import Agent, Evaluation
from shared.settings import Settings

# What routing reads of each live agent: a plan reads every live agent, so it loads these
# alone, the JSON fields picked out by the database, not ORM entities with whole JSON
# documents (with 200 agents, decoding the documents was half of a plan: benchmarks/scale.py).
VIEW_COLUMNS = (
    Agent.id,
    Agent.hostname,
    Agent.queue,
    Agent.framework,
    Agent.framework_version,
    Agent.device,
    Agent.hardware[("cpu", "architecture")].as_string().label("arch"),
    Agent.hardware[("cpu", "logical_cores")].as_string().label("logical_cores"),
    # Text: the size in bytes passes 32 bits, the width of as_integer() on Postgres.
    Agent.hardware[("memory_bytes",)].as_string().label("memory_bytes"),
    Agent.hardware[("gpus",)].label("gpus"),
    Agent.settings[("intra_op_threads",)].as_string().label("threads"),
    Agent.direct_queue,
)


def _count(value: Any) -> int:
    return int(value) if value not in (None, "") else 0


def agent_view(row: Any) -> AgentView:
    """The routing view of a row of VIEW_COLUMNS; hardware and settings are what the
    agent advertised."""
    return AgentView(
        id=row.id,
        hostname=row.hostname,
        queue=row.queue,
        framework=row.framework,
        framework_version=row.framework_version,
        device=row.device,
        arch=str(row.arch or ""),
        gpus=tuple(str(g.get("name", "")) for g in row.gpus or []),
        memory_bytes=_count(row.memory_bytes),
        logical_cores=_count(row.logical_cores),
        threads=_count(row.threads),
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
