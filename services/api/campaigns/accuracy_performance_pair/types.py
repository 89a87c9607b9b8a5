"""The accuracy + performance pair as the API shows it: each pass beside its evaluation,
the accuracy pass's top-1/top-5 and the performance pass's figures with their verdicts."""

from __future__ import annotations

import strawberry

from services.api.graphql.evaluations.types import EvaluationType, RunType
from services.core.campaigns.accuracy_performance_pair import ROLES, PairMember, summarise
from shared.db.evaluations import Evaluation
from shared.db.models import Run

# What the pair shows of its PairVerdict (core's), beside each pass.
SHOWN = ["top1", "top5", "accuracy_samples", "samples_per_second", "validity", "stability"]


@strawberry.type(name="PairPass")
class PairPassType:
    evaluation: EvaluationType
    # Null until the pass's run is stored.
    run: RunType | None


@strawberry.type(name="AccuracyPerformancePair")
class PairType:
    group_id: str
    # "running", "done" (both passes stored) or "failed"
    state: str
    accuracy: PairPassType | None
    performance: PairPassType | None
    # Whether both passes ran on one agent (null until both are claimed).
    same_agent: bool | None
    top1: float | None
    top5: float | None
    accuracy_samples: int | None
    samples_per_second: float | None
    validity: str | None
    stability: str | None

    @classmethod
    def from_members(cls, group_id: str, members: list[tuple[Evaluation, Run | None]]) -> PairType:
        by_role = {PairMember.read(e.group_info or {}, group_id).role: (e, r) for e, r in members}
        passes = {
            role: PairPassType(
                evaluation=EvaluationType.from_row(evaluation),
                run=RunType.from_row(run) if run is not None else None,
            )
            for role, (evaluation, run) in by_role.items()
        }
        state = (
            "done"
            if len(by_role) == len(ROLES) and all(r is not None for _, r in members)
            else "running"
        )
        if {e.state for e, _ in members} & {"FAILED", "CANCELLED"}:
            state = "failed"
        agents = {e.agent_id for e, _ in members}
        verdict = vars(summarise([run.report for _, run in members if run]))
        return cls(
            group_id=group_id,
            state=state,
            accuracy=passes.get("accuracy"),
            performance=passes.get("performance"),
            same_agent=None if None in agents else len(agents) == 1,
            **{name: verdict[name] for name in SHOWN},
        )
