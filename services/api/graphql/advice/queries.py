"""advice(model, latencyBoundMs, percentile): for each system that measured a model, the
highest Server QPS under the bound from stored find-peak probes and the cost of a million
inferences there (services/analysis/advice.py). Nothing is measured here: a system without
a find-peak result is listed with the command that would measure it."""

from __future__ import annotations

import strawberry
from sqlalchemy import select
from strawberry.scalars import JSON

from services.analysis.advice import (
    Advice,
    SystemAdvice,
    advise,
    check_request,
    load_reports,
)
from services.analysis.systems import machine_of
from services.api.context import ApiDeps, in_thread
from services.api.graphql.errors import InvalidInput
from services.api.graphql.scalars import copied, to_json
from shared.db.evaluations import Agent


@strawberry.type(name="SystemAdvice")
class SystemAdviceType:
    system: str
    machine: str
    framework: str
    settings: JSON
    # "meets the bound", "no valid peak" or "no find-peak result"
    status: str
    qps: float | None
    latency_ms: float | None
    run_id: str | None
    group_id: str | None
    validity: str
    stability: str
    # The peak run's host was busy (null: not recorded); busy_note says how busy.
    busy: bool | None
    busy_note: str
    price_per_hour: float | None
    cost_per_million: float | None
    notes: list[str]
    command: str
    # What cost_per_million prices ("inferences", "output tokens") and, for a workload
    # priced by its own rate, that rate per second.
    cost_unit: str
    rate_per_second: float | None

    @classmethod
    def from_advice(cls, item: SystemAdvice) -> SystemAdviceType:
        return copied(cls, item, settings=to_json(item.settings), notes=list(item.notes))


@strawberry.type(name="Advice")
class AdviceType:
    model: str
    latency_bound_ms: float
    percentile: float
    systems: list[SystemAdviceType]
    cheapest: str | None
    conclusion: str
    missing: list[str]

    @classmethod
    def from_advice(cls, advice: Advice) -> AdviceType:
        systems = [SystemAdviceType.from_advice(s) for s in advice.systems]
        return copied(cls, advice, systems=systems, missing=list(advice.missing))


def _advice(
    deps: ApiDeps, owner_id: int, model: str, bound: float, percentile: float
) -> AdviceType:
    with deps.read_db() as session:
        reports = load_reports(session, model, owner_id=owner_id)
        # The price each machine's agents declare now (their settings rows; the newest
        # heartbeat's where restarts left several), over the recorded ones.
        prices = {
            machine_of(agent_id, settings): float(settings["price_per_hour"])
            for agent_id, settings in session.execute(
                select(Agent.id, Agent.settings).order_by(Agent.last_heartbeat)
            )
            if isinstance((settings or {}).get("price_per_hour"), int | float)
        }
    found = advise(
        reports, model=model, latency_bound_ms=bound, percentile=percentile, prices=prices
    )
    return AdviceType.from_advice(found)


@strawberry.type
class AdviceQueries:
    @strawberry.field(description="The cheapest system meeting a latency bound for a model.")
    async def advice(
        self, info: strawberry.Info, model: str, latency_bound_ms: float, percentile: float = 99.0
    ) -> AdviceType | InvalidInput:
        owner = info.context.require_user()
        try:
            check_request(latency_bound_ms, percentile)
        except ValueError as exc:
            field = "percentile" if str(exc).startswith("--percentile") else "latencyBoundMs"
            return InvalidInput(
                message=str(exc), field=field, accepted=["50", "90", "95", "97", "99", "99.9"]
            )
        return await in_thread(
            _advice, info.context.deps, owner, model, latency_bound_ms, percentile
        )
