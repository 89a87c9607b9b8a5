"""Find-peak: the highest Server QPS whose latency percentile stays under a bound.

The search runs short Server tests (a ``probe`` per QPS): it brackets the peak by
doubling or halving from a start rate, then bisects the bracket until it is narrower than
``tolerance`` (relative). A probe passes when

- the chosen percentile of LoadGen's latency is within the bound, and
- the SUT kept up. In a short run an overloaded SUT can end before its queue pushes the
  percentile over the bound; its completion rate gives it away. LoadGen's completed rate
  counts up to the last completion, so even a SUT that keeps up shows a drain of up to
  the bound after the last arrival: the probe needs completed / scheduled of at least
  ``(1 - KEEP_UP_SLACK) * T / (T + bound)``, T the schedule's length.

LoadGen's own validity (early stopping needs far longer runs) and the stability verdict
are recorded with every probe but do not decide it. Every probe is a stored run.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from services.embedded.bench import BenchRequest
from services.evaluation.figures import as_float, latency_ms, percentile_key, verdicts

RunFn = Callable[[BenchRequest], dict[str, Any]]

KEEP_UP_SLACK = 0.03


@dataclass(frozen=True)
class Probe:
    qps: float
    passed: bool
    latency_ms: float  # at the chosen percentile
    completed_qps: float
    scheduled_qps: float
    validity: str
    stability: str
    run_id: str
    reason: str


@dataclass
class PeakResult:
    latency_bound_ms: float
    percentile: float
    peak: Probe | None  # the highest passing probe; None when even the lowest failed
    bracket: tuple[float, float]  # (highest pass, lowest fail); 0 / inf where unknown
    curve: list[Probe] = field(default_factory=list)  # in the order probed

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def judge(
    report: dict[str, Any], qps: float, *, latency_bound_ms: float, percentile: float
) -> Probe:
    """Pass or fail one Server run against the bound (see the module docstring)."""
    perf = report["performance"]
    observed = latency_ms(report, percentile_key(percentile))
    completed = as_float(perf["samples_per_second"])
    scheduled = as_float(perf.get("scheduled_samples_per_second"))
    if math.isnan(scheduled):
        scheduled = qps
    queries = float(perf.get("query_count") or 0)
    schedule_s = queries / scheduled if scheduled > 0 else 0.0
    drain = schedule_s / (schedule_s + latency_bound_ms / 1e3) if schedule_s else 1.0
    reasons = []
    if not observed <= latency_bound_ms:
        reasons.append(f"p{percentile:g} {observed:.1f} > {latency_bound_ms:g} ms")
    if not completed >= (1.0 - KEEP_UP_SLACK) * drain * scheduled:
        reasons.append(f"behind: {completed:.1f} of {scheduled:.1f}/s")
    if report.get("failed_samples"):
        reasons.append(f"{report['failed_samples']} samples failed in the backend")
    validity, stability = verdicts(report)
    return Probe(
        qps=qps,
        passed=not reasons,
        latency_ms=observed,
        completed_qps=completed,
        scheduled_qps=scheduled,
        validity=validity,
        stability=stability,
        run_id=str(report.get("run_id", "")),
        reason="; ".join(reasons) or "within bound",
    )


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
    """Bracket, then bisect. ``probe(qps)`` runs one Server test and judges it."""
    if start_qps <= 0 or math.isnan(start_qps):
        raise ValueError(f"start_qps: {start_qps} must be a positive rate")
    if not 0 < tolerance < 1:
        raise ValueError(f"tolerance: {tolerance} must lie strictly between 0 and 1")
    percentile_key(percentile)
    curve: list[Probe] = []
    best: Probe | None = None
    low, high = 0.0, math.inf

    def attempt(qps: float) -> bool:
        nonlocal best, low, high
        result = probe(qps)
        curve.append(result)
        if result.passed:
            low = max(low, qps)
            if best is None or qps > best.qps:
                best = result
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
    return PeakResult(
        latency_bound_ms=latency_bound_ms,
        percentile=percentile,
        peak=best,
        bracket=(low, high),
        curve=curve,
    )


def find_peak(
    request: BenchRequest,
    run: RunFn,
    *,
    latency_bound_ms: float,
    percentile: float = 99.0,
    start_qps: float | None = None,
    tolerance: float = 0.05,
    max_probes: int = 12,
    on_probe: Callable[[Probe], None] = lambda probe: None,
) -> tuple[PeakResult, dict[str, Any] | None]:
    """Search with stored Server runs of ``request``; returns the result and, when no
    start rate is given, the Offline run whose throughput became the start rate (an
    upper bound on what Server can sustain with the same batch size and workers)."""
    if latency_bound_ms <= 0:
        raise ValueError(f"--latency-bound-ms: {latency_bound_ms} must be positive")
    percentile_key(percentile)
    group_id = str(uuid.uuid4())
    estimate = None
    if start_qps is None:
        offline = request.scenario.model_copy(
            update={"scenario": "offline", "target_qps": None, "latency_percentile": None}
        )
        group = {"kind": "find-peak", "id": group_id, "role": "capacity estimate"}
        estimate = run(replace(request, scenario=offline, group=group, run_id=None))
        start_qps = float(estimate["performance"]["samples_per_second"])
        if not start_qps > 0:
            raise ValueError("find-peak: the Offline estimate completed no samples; see its run")

    def probe(qps: float) -> Probe:
        scenario = request.scenario.model_copy(
            update={
                "scenario": "server",
                "target_qps": qps,
                "target_latency_ms": latency_bound_ms,
                "latency_percentile": percentile,
            }
        )
        group = {"kind": "find-peak", "id": group_id, "role": "probe", "qps": qps}
        report = run(replace(request, scenario=scenario, group=group, run_id=None))
        result = judge(report, qps, latency_bound_ms=latency_bound_ms, percentile=percentile)
        on_probe(result)
        return result

    result = search_peak(
        probe,
        start_qps=start_qps,
        latency_bound_ms=latency_bound_ms,
        percentile=percentile,
        tolerance=tolerance,
        max_probes=max_probes,
    )
    return result, estimate
