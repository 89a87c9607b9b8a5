"""A find-peak search as the API shows it: its settings, each probe judged against the
bound beside its evaluation, and the peak (or why there is none) once it is done."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import strawberry

from services.api.campaigns.groups import stopped_reason
from services.api.graphql.confidence.types import IntervalType
from services.api.graphql.evaluations.mutations import SubmitEvaluationInput
from services.api.graphql.evaluations.types import EvaluationType
from services.core.campaigns import find_peak as peak
from services.core.campaigns.find_peak import SearchSettings
from services.core.campaigns.group import Done
from services.core.find_peak_search import PeakResult, Probe
from shared.db.evaluations import Evaluation
from shared.db.models import Run


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class FindPeakView:
    group_id: str
    settings: SearchSettings
    # "searching", "done", or "failed" (a member ended FAILED or CANCELLED)
    state: str
    reason: str
    estimate: tuple[Evaluation, Run | None] | None
    probes: list[tuple[Evaluation, Run | None, Probe | None]]
    result: PeakResult | None


def group_of(evaluation: Evaluation) -> peak.FindPeakGroup:
    # submit keeps the group's id in its own column (the run's report joins them again).
    return peak.FindPeakGroup.from_dict(
        {**(evaluation.group_info or {}), "id": evaluation.group_id}
    )


def view_of(group_id: str, members: list[tuple[Evaluation, Run | None]]) -> FindPeakView:
    """The search as stored: its probes judged, its state and, once done, its result."""
    group = group_of(members[0][0])
    roles = {e.id: (e.group_info or {}).get("role") for e, _ in members}
    estimate = next(((e, r) for e, r in members if roles[e.id] == peak.ESTIMATE), None)
    probes = [
        (e, r, peak.judged(group, r.report) if r is not None else None)
        for e, r in members
        if roles[e.id] == peak.PROBE
    ]
    view = FindPeakView(group_id, group.search, "searching", "", estimate, probes, None)
    ended = [e for e, _ in members if e.state in {"FAILED", "CANCELLED"}]
    if ended:
        return replace(view, state="failed", reason=f"{ended[0].state}: {ended[0].reason}")
    if stopped := stopped_reason(members):
        return replace(view, state="failed", reason=f"the next probe was refused: {stopped}")
    if any(r is None for _, r in members):
        return view  # a member still runs
    try:
        found = peak.next_step(group, [r.report for _, r in members if r is not None])
    except peak.NoEstimate:
        return replace(view, state="failed", reason=peak.NO_ESTIMATE)
    if isinstance(found, Done):
        return replace(view, state="done", reason=found.summary.verdict, result=found.summary)
    return view


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
        if probe is None:
            return cls(
                qps=qps,
                evaluation=evaluation,
                run_id=run_id,
                passed=None,
                latency_ms=None,
                completed_qps=None,
                validity=None,
                stability=None,
                judged=None,
                reason=None,
            )
        return cls(
            qps=qps,
            evaluation=evaluation,
            run_id=run_id,
            passed=probe.passed,
            latency_ms=_finite(probe.latency_ms),
            completed_qps=_finite(probe.completed_qps),
            validity=probe.validity,
            stability=probe.stability,
            judged=probe.judged,
            reason=probe.reason,
            latency_interval=(
                IntervalType.from_dict(probe.latency_interval) if probe.latency_interval else None
            ),
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
        return cls.from_view(view_of(group_id, members))

    @classmethod
    def from_view(cls, view: FindPeakView) -> FindPeakType:
        estimate_rate = None
        if view.settings.start_qps is not None:
            estimate_rate = view.settings.start_qps
        elif view.estimate is not None and view.estimate[1] is not None:
            estimate_rate = view.estimate[1].samples_per_second
        probes = [
            FindPeakProbeType.from_parts(
                float((e.group_info or {})["qps"]),
                EvaluationType.from_row(e),
                run.id if run is not None else None,
                probe,
            )
            for e, run, probe in view.probes
        ]
        result = view.result
        peak = result.peak if result is not None else None
        return cls(
            group_id=view.group_id,
            latency_bound_ms=view.settings.latency_bound_ms,
            percentile=view.settings.percentile,
            tolerance=view.settings.tolerance,
            max_probes=view.settings.max_probes,
            state=view.state,
            verdict=view.reason,
            start_qps=estimate_rate,
            estimate=EvaluationType.from_row(view.estimate[0]) if view.estimate else None,
            probes=probes,
            peak_qps=peak.qps if peak is not None else None,
            peak_latency_ms=_finite(peak.latency_ms) if peak is not None else None,
            peak_run_id=peak.run_id if peak is not None else None,
            reason=result.reason if result is not None else "",
            advice=list(result.advice) if result is not None else [],
        )
