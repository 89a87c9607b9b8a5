"""A find-peak search as the API shows it: its settings, each probe judged against the
bound beside its evaluation, and the peak (or why there is none) once it is done."""

from __future__ import annotations

import strawberry

from services.api.campaigns.groups import stopped_reason
from services.api.graphql.confidence.types import IntervalType
from services.api.graphql.evaluations.mutations import SubmitEvaluationInput
from services.api.graphql.evaluations.types import EvaluationType
from services.core.campaigns import find_peak as peak
from services.core.campaigns.find_peak import SearchSettings
from services.core.campaigns.group import Done
from services.core.find_peak_search import PeakResult, Probe
from services.core.run_report import json_safe
from shared.db.evaluations import Evaluation
from shared.db.models import Run


def group_of(evaluation: Evaluation) -> peak.FindPeakGroup:
    # submit keeps the group's id in its own column (the run's report joins them again).
    return peak.FindPeakGroup.from_dict(
        {**(evaluation.group_info or {}), "id": evaluation.group_id}
    )


def role_of(evaluation: Evaluation) -> object:
    return (evaluation.group_info or {}).get("role")


def state_of(
    group: peak.FindPeakGroup, members: list[tuple[Evaluation, Run | None]]
) -> tuple[str, str, PeakResult | None]:
    """The search as stored: "searching", "done" or "failed" (a member ended FAILED or
    CANCELLED, the next one was refused, the estimate gave no rate), why, and the result."""
    ended = [e for e, _ in members if e.state in {"FAILED", "CANCELLED"}]
    if ended:
        return "failed", f"{ended[0].state}: {ended[0].reason}", None
    if stopped := stopped_reason(members):
        return "failed", f"the next probe was refused: {stopped}", None
    if any(r is None for _, r in members):
        return "searching", "", None  # a member still runs
    try:
        found = peak.next_step(group, [r.report for _, r in members if r is not None])
    except peak.NoEstimate:
        return "failed", peak.NO_ESTIMATE, None
    if isinstance(found, Done):
        return "done", found.summary.verdict, found.summary
    return "searching", "", None


@strawberry.input
class SubmitFindPeakInput:
    # The model, framework, agent constraints, batch size and settings each probe runs
    # with; its scenario is replaced (Offline for the estimate, Server for the probes).
    evaluation: SubmitEvaluationInput
    latency_bound_ms: float
    percentile: float = 99.0
    # None: an Offline run first, whose throughput is the start rate.
    start_qps: float | None = None
    tolerance: float = 0.05
    max_probes: int = 12

    def search(self) -> SearchSettings:
        return SearchSettings(
            self.latency_bound_ms, self.percentile, self.tolerance, self.max_probes, self.start_qps
        )


# What a probe shows of its judged Probe (core's), beside its rate, evaluation and run.
PROBE_SHOWN = ["passed", "latency_ms", "completed_qps", "validity", "stability", "judged", "reason"]


@strawberry.type(name="FindPeakProbe")
class FindPeakProbeType:
    qps: float
    evaluation: EvaluationType
    run_id: str | None
    # Null until the probe's run is stored.
    passed: bool | None
    latency_ms: float | None
    completed_qps: float | None
    validity: str | None
    stability: str | None
    # Within bound and VALID and stability judged: a probe that can be the peak.
    judged: bool | None
    reason: str | None
    # The 95 % interval of the judged latency (SUT clock), where the run gives one.
    latency_interval: IntervalType | None = None

    @classmethod
    def from_parts(
        cls, qps: float, evaluation: EvaluationType, run_id: str | None, probe: Probe | None
    ) -> FindPeakProbeType:
        """``probe``: None until its run is stored (every figure null)."""
        shown = {name: json_safe(getattr(probe, name, None)) for name in PROBE_SHOWN}
        interval = probe.latency_interval if probe is not None else None
        return cls(
            qps=qps,
            evaluation=evaluation,
            run_id=run_id,
            **shown,
            latency_interval=IntervalType.from_dict(interval) if interval else None,
        )


@strawberry.type(name="FindPeak")
class FindPeakType:
    group_id: str
    latency_bound_ms: float
    percentile: float
    tolerance: float
    max_probes: int
    # "searching", "done" or "failed"
    state: str
    # done: "peak" or "no valid peak"; failed: why
    verdict: str
    # The start rate: the one given, or the Offline capacity estimate's throughput.
    start_qps: float | None
    estimate: EvaluationType | None
    probes: list[FindPeakProbeType]
    peak_qps: float | None
    peak_latency_ms: float | None
    peak_run_id: str | None
    # Why there is no valid peak, or why it is below the highest rate within the bound.
    reason: str
    # Settings that would give a valid peak.
    advice: list[str]

    @classmethod
    def from_members(
        cls, group_id: str, members: list[tuple[Evaluation, Run | None]]
    ) -> FindPeakType:
        group = group_of(members[0][0])
        search = group.search
        state, verdict, result = state_of(group, members)
        estimate = next(((e, r) for e, r in members if role_of(e) == peak.ESTIMATE), None)
        start_qps = search.start_qps
        if start_qps is None and estimate is not None and estimate[1] is not None:
            start_qps = estimate[1].samples_per_second
        probes = [
            FindPeakProbeType.from_parts(
                float((e.group_info or {})["qps"]),
                EvaluationType.from_row(e),
                run.id if run is not None else None,
                peak.judged(group, run.report) if run is not None else None,
            )
            for e, run in members
            if role_of(e) == peak.PROBE
        ]
        best = result.peak if result is not None else None
        return cls(
            group_id=group_id,
            latency_bound_ms=search.latency_bound_ms,
            percentile=search.percentile,
            tolerance=search.tolerance,
            max_probes=search.max_probes,
            state=state,
            verdict=verdict,
            start_qps=start_qps,
            estimate=EvaluationType.from_row(estimate[0]) if estimate else None,
            probes=probes,
            peak_qps=best.qps if best is not None else None,
            peak_latency_ms=json_safe(best.latency_ms) if best is not None else None,
            peak_run_id=best.run_id if best is not None else None,
            reason=result.reason if result is not None else "",
            advice=list(result.advice) if result is not None else [],
        )
