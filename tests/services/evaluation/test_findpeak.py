"""Find-peak: the search on a known capacity, then against the null backend's theory."""

from __future__ import annotations

import math
from typing import Any

import pytest

from services.aggregator.repository import get_run
from services.embedded.bench import BenchRequest, run_bench
from services.evaluation.findpeak import Probe, find_peak, judge, search_peak
from services.inference.backends.base import BackendOptions
from services.inference.loadgen.config import ScenarioConfig
from shared.db.session import session_scope
from shared.settings import Settings


def capacity_probe(capacity: float, calls: list[float]):  # type: ignore[no-untyped-def]
    def probe(qps: float) -> Probe:
        calls.append(qps)
        passed = qps <= capacity
        return Probe(qps, passed, 1.0 if passed else 99.0, qps, qps, "VALID", "STABLE", "", "")

    return probe


@pytest.mark.parametrize("start", [10.0, 100.0, 1000.0])
def test_search_brackets_then_bisects_to_the_capacity(start: float) -> None:
    calls: list[float] = []
    result = search_peak(
        capacity_probe(137.0, calls), start_qps=start, latency_bound_ms=10, tolerance=0.02
    )
    assert result.peak is not None
    low, high = result.bracket
    assert low <= 137.0 < high and (high - low) / high <= 0.02
    assert result.peak.qps == low
    assert [p.qps for p in result.curve] == calls  # the curve is every probe, in order


def test_search_reports_no_peak_when_nothing_passes() -> None:
    result = search_peak(capacity_probe(0.1, []), start_qps=64, latency_bound_ms=10, max_probes=5)
    assert result.peak is None and len(result.curve) == 5


def _server_report(p99_ms: float, completed: float, scheduled: float) -> dict[str, Any]:
    latency = {"mean_ns": 1e6, "percentiles_ns": {"p99": p99_ms * 1e6, "p90": 1e6}}
    return {
        "run_id": "r",
        "performance": {
            "latency": latency,
            "samples_per_second": completed,
            "scheduled_samples_per_second": scheduled,
            "query_count": int(scheduled * 2),  # a 2 s schedule
            "validity": {"result": "INVALID"},
        },
        "stability": {"verdict": "INSUFFICIENT"},
    }


def test_judge_needs_the_percentile_under_the_bound_and_the_sut_keeping_up() -> None:
    ok = judge(_server_report(40, 98, 100), 100, latency_bound_ms=50, percentile=99)
    slow = judge(_server_report(60, 98, 100), 100, latency_bound_ms=50, percentile=99)
    # Within the bound, but completing 85 of 100/s: an overload a short run hides.
    behind = judge(_server_report(40, 85, 100), 100, latency_bound_ms=50, percentile=99)
    assert ok.passed and not slow.passed and not behind.passed
    assert "p99 60.0 > 50 ms" in slow.reason and "behind" in behind.reason
    with pytest.raises(ValueError, match="--percentile: 98 is not reported by LoadGen"):
        judge(_server_report(40, 98, 100), 100, latency_bound_ms=50, percentile=98)


def test_null_backend_peak_matches_queueing_theory(settings: Settings) -> None:
    # Two SUT workers, 10 ms per query, batch 1: at most 2 / 10 ms = 200 queries/s.
    service_ms, workers = 10.0, 2
    analytical = workers / (service_ms / 1000)
    request = BenchRequest(
        model="tests/fixtures/tiny_cnn.yaml",
        framework="null",
        scenario=ScenarioConfig(scenario="server", min_duration_s=1.5),
        samples=16,
        workers=workers,
        backend_options=BackendOptions(extra={"service_time_ms": service_ms}),
    )
    result, estimate = find_peak(
        request,
        lambda r: run_bench(r, settings),
        latency_bound_ms=100,
        percentile=99,
        tolerance=0.04,
    )
    assert estimate is not None and result.peak is not None
    assert abs(result.peak.qps - analytical) / analytical <= 0.10, result.to_dict()
    assert not math.isinf(result.bracket[1])
    with session_scope(settings.effective_database_url) as session:
        stored = get_run(session, result.peak.run_id).report
    assert stored["group"]["kind"] == "find-peak"
    assert stored["settings"]["scenario"]["target_qps"] == result.peak.qps
