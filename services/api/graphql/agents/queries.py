"""agents: the inference workers known to the system, live ones first."""

from __future__ import annotations

import strawberry
from sqlalchemy import select

from services.api.context import ApiDeps, read_on_loop
from services.api.graphql.agents.types import AgentType
from shared.db import evaluation_repo, liveness
from shared.db.evaluations import Agent


def list_agents(deps: ApiDeps, live_only: bool) -> list[AgentType]:
    """The agents (every caller sees the same list), kept ``api_shared_reads_cache_seconds``."""
    return deps.shared_reads.get(("agents", live_only), lambda: _agents(deps, live_only))


def _agents(deps: ApiDeps, live_only: bool) -> list[AgentType]:
    with deps.read_db() as session:
        within = liveness.live_within_s(session, deps.settings)
        live = evaluation_repo.live_agents(session, within_s=within)
        live_ids = {a.id for a in live}
        rows = live if live_only else list(session.scalars(select(Agent).order_by(Agent.id)))
        return [AgentType.from_row(a, a.id in live_ids) for a in rows]


@strawberry.type
class AgentQueries:
    @strawberry.field
    async def agents(self, info: strawberry.Info, live_only: bool = True) -> list[AgentType]:
        info.context.require_user()
        return await read_on_loop(list_agents, info.context.deps, live_only)
