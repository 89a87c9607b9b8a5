"""Find-peak's search: the highest Server QPS whose latency percentile stays under a bound.

The search runs short Server tests (a ``probe`` per QPS): it brackets the peak by
doubling or halving from a start rate, then bisects the bracket until it is narrower than
``tolerance`` (relative). A probe passes when

- the chosen percentile of LoadGen's latency is within the bound, and
- the SUT kept up. In a short run an overloaded SUT can end before its queue pushes the
  percentile over the bound; its completion rate gives it away. LoadGen's completed rate
  counts up to the last completion, so even a SUT that keeps up shows a drain of up to
  the bound after the last arrival: the probe needs completed / scheduled of at least
  ``(1 - KEEP_UP_SLACK) * T / (T + bound)``, T the schedule's length.

Passing steers the search. The reported peak is stricter: the highest passing probe that
LoadGen calls VALID and whose stability verdict is not INSUFFICIENT (a figure LoadGen or the
stability rule could not judge is no peak). When no probe qualifies the result is "no
valid peak", with the reason and the settings that would give one, derived from what the
probes lacked: LoadGen's early-stopping estimate of the queries still needed, the stability
rule's sample count, the lowest rate probed and the latency it measured. Every probe is a
stored run.

Pure: both launchers' find-peak (services/core/campaigns/find_peak.py ``step``) replays
``next_step`` over the probes run so far; both are this code.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from services.core.figures import as_float, latency_ms, percentile_key, verdicts
from services.core.stability import MIN_SERVER_SAMPLES, WINDOWS
from services.core.stored_report import LoadGenReport, load_loadgen_report

KEEP_UP_SLACK = 0.03
# LoadGen's early-stopping estimate assumes every further query is under the bound, and
# Poisson arrivals vary the count a duration yields: advised durations carry this margin.
DURATION_MARGIN = 1.25
# "Would need to run at least 263 more queries" in LoadGen's early-stopping result.
_MORE_QUERIES = re.compile(r"at least (\d+) more queries")


@dataclass(frozen=True)
class Probe:
    qps: float
    passed: bool  # within the bound and kept up: this steers the search
    latency_ms: float  # at the chosen percentile
    completed_qps: float
    scheduled_qps: float
    validity: str
    stability: str
    run_id: str
    reason: str
    validity_reasons: list[str] = field(default_factory=list)
    stability_reasons: list[str] = field(default_factory=list)
    failed_samples: int = 0
    # The shortest --duration after which this rate could be judged (LoadGen's early
    # stopping and the stability rule's sample count); None when nothing asks for more.
    duration_needed_s: float | None = None
    # The 95 % interval of the latency at the chosen percentile (SUT clock: estimate, low,
    # high, reason), where the run stored one for it (p50, p90, p99); else None.
    latency_interval: dict[str, Any] | None = None
    # Whether this probe can be the reported peak; derived, never passed in.
    judged: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "judged", self.validity == "VALID" and self.stability != "INSUFFICIENT"
        )

    def shortfalls(self) -> list[str]:
        """Why a probe within the bound cannot be the peak, briefly."""
        found = []
        if self.validity != "VALID":
            # LoadGen's reasons read "what: what to do"; the first part says enough here.
            heads = dict.fromkeys(r.split(":")[0] for r in self.validity_reasons)
            found.append(f"{self.validity}" + (f" ({'; '.join(heads)})" if heads else ""))
        if self.stability == "INSUFFICIENT":
            found.append("stability INSUFFICIENT")
        return found


@dataclass
class PeakResult:
    latency_bound_ms: float
    percentile: float
    # The highest probe within the bound that is also judged (VALID and stability judged);
    # None when there is none: "no valid peak".
    peak: Probe | None
    bracket: tuple[float, float]  # (highest pass, lowest fail); 0 / inf where unknown
    curve: list[Probe] = field(default_factory=list)  # in the order probed
    # The highest probe within the bound, judged or not: where the search put the edge.
    within_bound: Probe | None = None
    verdict: str = ""  # "peak" or "no valid peak"
    reason: str = ""  # why there is no valid peak, or why it is below within_bound
    advice: list[str] = field(default_factory=list)  # settings that would give a valid peak

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def judge(
    stored: Mapping[str, Any] | LoadGenReport,
    qps: float,
    *,
    latency_bound_ms: float,
    percentile: float,
) -> Probe:
    """Pass or fail one Server run against the bound (see the module docstring)."""
    report = load_loadgen_report(stored)
    perf = report.perf
    observed = latency_ms(report, percentile_key(percentile))
    completed = as_float(perf.samples_per_second)
    scheduled = as_float(perf.scheduled_samples_per_second)
    if math.isnan(scheduled):
        scheduled = qps
    queries = float(perf.query_count or 0)
    schedule_s = queries / scheduled if scheduled > 0 else 0.0
    drain = schedule_s / (schedule_s + latency_bound_ms / 1e3) if schedule_s else 1.0
    reasons = []
    if not observed <= latency_bound_ms:
        reasons.append(f"p{percentile:g} {observed:.1f} > {latency_bound_ms:g} ms")
    if not completed >= (1.0 - KEEP_UP_SLACK) * drain * scheduled:
        reasons.append(f"behind: {completed:.1f} of {scheduled:.1f}/s")
    if report.failed_samples:
        reasons.append(f"{report.failed_samples} samples failed in the backend")
    validity, stability = verdicts(report)
    return Probe(
        qps=qps,
        passed=not reasons,
        latency_ms=observed,
        completed_qps=completed,
        scheduled_qps=scheduled,
        validity=validity,
        stability=stability,
        run_id=report.run_id,
        reason="; ".join(reasons) or "within bound",
        validity_reasons=list(perf.validity.reasons),
        stability_reasons=list(report.stability.reasons if report.stability else []),
        failed_samples=report.failed_samples,
        duration_needed_s=_duration_needed(report, queries, scheduled, stability),
        latency_interval=_interval(report, f"latency_{percentile_key(percentile)}"),
    )


def _interval(report: LoadGenReport, figure: str) -> dict[str, Any] | None:
    found = ((report.confidence or {}).get("figures") or {}).get(figure)
    return dict(found) if found else None


def _duration_needed(
    report: LoadGenReport, queries: float, scheduled: float, stability: str
) -> float | None:
    """Seconds of schedule that LoadGen's early stopping and the stability rule ask for."""
    if not scheduled > 0:
        return None
    needs = []
    early = report.perf.validity.early_stopping_result
    more = _MORE_QUERIES.search(" ".join(early.split()))
    if more:
        needs.append((queries + int(more.group(1))) / scheduled)
    if stability == "INSUFFICIENT":
        needs.append(MIN_SERVER_SAMPLES * WINDOWS / scheduled)
    return max(needs) if needs else None


def conclude(
    curve: list[Probe],
    *,
    latency_bound_ms: float,
    percentile: float,
    bracket: tuple[float, float],
) -> PeakResult:
    """The peak (or "no valid peak") of a finished search, with the reason and advice."""
    passing = [p for p in curve if p.passed]
    judged = [p for p in passing if p.judged]
    within = max(passing, key=lambda p: p.qps, default=None)
    peak = max(judged, key=lambda p: p.qps, default=None)
    bound = f"p{percentile:g} <= {latency_bound_ms:g} ms"
    reason, advice = "", []
    failed = sum(p.failed_samples for p in curve)
    if failed and peak is None:
        # A probe with failed samples fails (judge); no setting below helps until they stop.
        advice.append(f"fix the backend first: {failed} samples failed (see the probes' runs)")
    if within is None:
        lowest = min(curve, key=lambda p: p.qps)
        reason = (
            f"none of the {len(curve)} probes met {bound}; the lowest rate, "
            f"{lowest.qps:.1f} QPS: {lowest.reason}"
        )
        advice.append(f"a lower --start-qps, below {lowest.qps:.3g} (the lowest rate probed)")
        if math.isfinite(lowest.latency_ms):
            advice.append(
                f"a looser --latency-bound-ms, above {lowest.latency_ms:.1f} "
                f"(p{percentile:g} at {lowest.qps:.1f} QPS)"
            )
    else:
        unjudged = [p for p in passing if not p.judged and (peak is None or p.qps > peak.qps)]
        if unjudged:
            invalid = [p for p in unjudged if p.validity != "VALID"]
            insufficient = [p for p in unjudged if p.stability == "INSUFFICIENT"]
            heads = dict.fromkeys(r.split(":")[0] for p in invalid for r in p.validity_reasons)
            parts = []
            if invalid:
                parts.append(
                    f"{len(invalid)} INVALID" + (f" ({'; '.join(heads)})" if heads else "")
                )
            if insufficient:
                parts.append(f"{len(insufficient)} stability INSUFFICIENT")
            probes = f"{len(unjudged)} probe" + ("s" if len(unjudged) > 1 else "")
            which = (
                f"{probes} met the bound, none judged"
                if peak is None
                else f"{probes} above the peak, up to {within.qps:.1f} QPS, met the bound "
                "but not judged"
            )
            reason = f"{which}: {', '.join(parts)}"
            advice.extend(_advice_for(within, unjudged))
    return PeakResult(
        latency_bound_ms=latency_bound_ms,
        percentile=percentile,
        peak=peak,
        bracket=bracket,
        curve=curve,
        within_bound=within,
        verdict="peak" if peak is not None else "no valid peak",
        reason=reason,
        advice=advice,
    )


def _advice_for(within: Probe, unjudged: list[Probe]) -> list[str]:
    """Settings under which the highest rate within the bound could be judged."""
    advice = []
    needed = [p.duration_needed_s for p in unjudged if p.duration_needed_s is not None]
    if needed:
        seconds = math.ceil(max(needed) * DURATION_MARGIN)
        advice.append(
            f"--duration {seconds} s or more (LoadGen's early stopping and the "
            f"stability rule's {MIN_SERVER_SAMPLES * WINDOWS} samples need at least "
            f"{max(needed):.1f} s at these rates)"
        )
    elif any(p.validity != "VALID" for p in unjudged):
        advice.append(
            "a longer run: raise --duration (LoadGen gave no estimate of the queries needed)"
        )
    advice.append(f"--start-qps {within.qps:.1f}, where the bound was met, so fewer probes run")
    return advice


def search_peak(
    probe: Callable[[float], Probe],
    *,
    start_qps: float,
    latency_bound_ms: float,
    percentile: float = 99.0,
    tolerance: float = 0.05,
    max_probes: int = 12,
    min_qps: float = 0.5,
) -> PeakResult:
    """Bracket, then bisect on ``Probe.passed``; ``probe(qps)`` runs one Server test and
    judges it. The peak is then chosen among the judged probes (see ``conclude``)."""
    if start_qps <= 0 or math.isnan(start_qps):
        raise ValueError(f"start_qps: {start_qps} must be a positive rate")
    if not 0 < tolerance < 1:
        raise ValueError(f"tolerance: {tolerance} must lie strictly between 0 and 1")
    percentile_key(percentile)
    curve: list[Probe] = []
    low, high = 0.0, math.inf

    def attempt(qps: float) -> bool:
        nonlocal low, high
        result = probe(qps)
        curve.append(result)
        if result.passed:
            low = max(low, qps)
        else:
            high = min(high, qps)
        return result.passed

    qps = start_qps
    if attempt(qps):
        while math.isinf(high) and len(curve) < max_probes:
            qps *= 2
            attempt(qps)
    else:
        while low == 0.0 and len(curve) < max_probes and qps / 2 >= min_qps:
            qps /= 2
            attempt(qps)
    while low > 0 and not math.isinf(high) and (high - low) / high > tolerance:
        if len(curve) >= max_probes:
            break
        attempt((low + high) / 2)
    return conclude(
        curve, latency_bound_ms=latency_bound_ms, percentile=percentile, bracket=(low, high)
    )


class _ProbeNeeded(Exception):
    def __init__(self, qps: float) -> None:
        super().__init__(qps)
        self.qps = qps


def next_step(
    probes: list[Probe],
    *,
    start_qps: float,
    latency_bound_ms: float,
    percentile: float = 99.0,
    tolerance: float = 0.05,
    max_probes: int = 12,
) -> float | PeakResult:
    """Where a search stands after ``probes`` (in the order run): the rate to probe next,
    or the result once it is done. Each launcher takes one step per probe run
    (core/campaigns/find_peak.py); this replays ``search_peak`` over the probes already
    run, so both searches are the same code and agree probe for probe."""
    replay = iter(probes)

    def probe(qps: float) -> Probe:
        stored = next(replay, None)
        if stored is None:
            raise _ProbeNeeded(qps)
        if not math.isclose(stored.qps, qps, rel_tol=1e-9):
            raise ValueError(f"find-peak: probe {stored.qps:g} QPS stored where {qps:g} was due")
        return stored

    try:
        return search_peak(
            probe,
            start_qps=start_qps,
            latency_bound_ms=latency_bound_ms,
            percentile=percentile,
            tolerance=tolerance,
            max_probes=max_probes,
        )
    except _ProbeNeeded as needed:
        return needed.qps
