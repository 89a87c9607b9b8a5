"""Find-peak in one process: the Offline capacity estimate, then Server probes of one
bench request, each a stored run, steered by the search in services/core/find_peak_search.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from services.core.early_stopping import MAX_SIZED_PROBE_S, duration_warning, sized_probe_s
from services.core.figures import percentile_key
from services.core.find_peak_search import (
    DURATION_MARGIN,
    PeakResult,
    Probe,
    judge,
    search_peak,
)
from services.embedded.bench import BenchRequest
from shared.stored_report import load_loadgen_report

RunFn = Callable[[BenchRequest], dict[str, Any]]


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
    size_probes: bool = False,
    warn: Callable[[str], None] = lambda line: None,
) -> tuple[PeakResult, dict[str, Any] | None]:
    """Search with stored Server runs of ``request``; returns the result and, when no
    start rate is given, the Offline run whose throughput became the start rate (an
    upper bound on what Server can sustain with the same batch size and workers).

    ``size_probes``: each probe runs as long as LoadGen's early stopping and the stability
    rule need at its rate (core/early_stopping.py); else the request's duration, and
    ``warn`` is told when that is too short to judge a probe at the start rate."""
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
        start_qps = float(load_loadgen_report(estimate).perf.samples_per_second)
        if not start_qps > 0:
            raise ValueError("find-peak: the Offline estimate completed no samples; see its run")
    if not size_probes:
        fixed = request.scenario.effective_min_duration_s
        warning = duration_warning(fixed, start_qps, percentile)
        if warning is not None:
            warn(warning)

    def run_probe(qps: float, duration_s: float | None) -> Probe:
        update: dict[str, Any] = {
            "scenario": "server",
            "target_qps": qps,
            "target_latency_ms": latency_bound_ms,
            "latency_percentile": percentile,
        }
        if duration_s is not None:
            update["min_duration_s"] = duration_s
        scenario = request.scenario.model_copy(update=update)
        group = {"kind": "find-peak", "id": group_id, "role": "probe", "qps": qps}
        report = run(replace(request, scenario=scenario, group=group, run_id=None))
        return judge(report, qps, latency_bound_ms=latency_bound_ms, percentile=percentile)

    def probe(qps: float) -> Probe:
        sized = sized_probe_s(qps, percentile) if size_probes else None
        result = run_probe(qps, sized)
        longer = longer_probe_s(result, sized)
        if longer is not None:
            warn(
                f"{qps:.1f} QPS met the bound but was not judged in {sized:g} s "
                f"({', '.join(result.shortfalls())}; run {result.run_id[:8]}): "
                f"run again for {longer:g} s"
            )
            result = run_probe(qps, longer)
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


def longer_probe_s(result: Probe, sized_s: float | None) -> float | None:
    """How long to run a sized probe once more: one that met the bound but that LoadGen's
    early stopping or the stability rule could not judge (it is sized for one query over
    the bound; a jittery host puts more there), as long as they ask, with the arrivals'
    margin, at most ``MAX_SIZED_PROBE_S``. None for a probe judged, failed, not sized
    (the user's --duration is kept), already at the cap, or with nothing asked for."""
    if sized_s is None or not result.passed or result.judged:
        return None
    if result.duration_needed_s is None or sized_s >= MAX_SIZED_PROBE_S:
        return None
    # What they ask for is past what ran (LoadGen counts the queries still missing).
    return min(DURATION_MARGIN * result.duration_needed_s, MAX_SIZED_PROBE_S)
