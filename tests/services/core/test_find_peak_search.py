"""Find-peak's search (core/find_peak_search.py): on a known capacity, the judging of one
probe, the advice when no probe qualifies, and the stack's replay of the same steps."""

from __future__ import annotations

import math
from typing import Any

import pytest

from services.core.find_peak_search import Probe, conclude, judge, next_step, search_peak


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


def _server_report(
    p99_ms: float, completed: float, scheduled: float, *, early_stopping: str = ""
) -> dict[str, Any]:
    latency = {"mean_ns": 1e6, "percentiles_ns": {"p99": p99_ms * 1e6, "p90": 1e6}}
    reasons = ["early stopping not satisfied: too few queries for the target percentile"]
    return {
        "run_id": "r",
        "performance": {
            "latency": latency,
            "samples_per_second": completed,
            "scheduled_samples_per_second": scheduled,
            "query_count": int(scheduled * 2),  # a 2 s schedule
            "validity": {
                "result": "INVALID",
                "reasons": reasons,
                "early_stopping_result": early_stopping,
            },
        },
        "stability": {"verdict": "INSUFFICIENT", "reasons": ["Server windows of 40 samples"]},
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


def _probe(qps: float, passed: bool, validity: str, stability: str, **extra: Any) -> Probe:
    latency = 5.0 if passed else 500.0
    reason = "within bound" if passed else "p99 500.0 > 50 ms"
    return Probe(
        qps, passed, latency, qps, qps, validity, stability, f"run{qps:g}", reason, **extra
    )


def test_judge_estimates_the_duration_that_would_judge_the_probe() -> None:
    # LoadGen's wording, line break included.
    early = "* Processed 200 queries. * Would need to run at least\n 263 more queries"
    probe = judge(
        _server_report(40, 98, 100, early_stopping=early), 100, latency_bound_ms=50, percentile=99
    )
    assert probe.passed and not probe.judged
    # Early stopping: (200 + 263) queries at 100/s; stability: 5 windows x 100 at 100/s.
    assert probe.duration_needed_s == pytest.approx(5.0)
    assert probe.shortfalls() == [
        "INVALID (early stopping not satisfied)",
        "stability INSUFFICIENT",
    ]
    short = judge(
        _server_report(40, 98, 100, early_stopping="* Would need to run at least 900 more queries"),
        100,
        latency_bound_ms=50,
        percentile=99,
    )
    assert short.duration_needed_s == pytest.approx(11.0)


def test_no_valid_peak_when_every_probe_within_the_bound_is_unjudged() -> None:
    curve = [
        _probe(100, True, "INVALID", "INSUFFICIENT", duration_needed_s=4.0,
               validity_reasons=["early stopping not satisfied: too few queries"]),
        _probe(200, True, "VALID", "INSUFFICIENT", duration_needed_s=2.5),
        _probe(400, False, "INVALID", "UNSTABLE"),
    ]  # fmt: skip
    result = conclude(curve, latency_bound_ms=50, percentile=99, bracket=(200, 400))
    assert result.peak is None and result.verdict == "no valid peak"
    assert result.within_bound is curve[1]
    assert result.reason == (
        "2 probes met the bound, none judged: 1 INVALID (early stopping not satisfied), "
        "2 stability INSUFFICIENT"
    )
    # The longest need (4 s) with the margin, rounded up: 5 s.
    assert result.advice[0].startswith("--duration 5 s or more")
    assert result.advice[-1].startswith("--start-qps 200.0")
    payload = result.to_dict()
    assert payload["peak"] is None and [p["judged"] for p in payload["curve"]] == [False] * 3


def test_the_peak_is_the_highest_judged_probe_and_the_rest_are_named() -> None:
    curve = [
        _probe(100, True, "VALID", "STABLE"),
        _probe(200, True, "VALID", "UNSTABLE"),
        _probe(300, True, "INVALID", "INSUFFICIENT", duration_needed_s=3.0),
        _probe(400, False, "INVALID", "UNSTABLE"),
    ]
    result = conclude(curve, latency_bound_ms=50, percentile=99, bracket=(300, 400))
    assert result.peak is curve[1] and result.verdict == "peak"
    assert result.within_bound is curve[2]
    assert result.reason.startswith("1 probe above the peak, up to 300.0 QPS, met the bound")
    assert any("--duration 4 s" in a for a in result.advice)
    plain = conclude(curve[:2], latency_bound_ms=50, percentile=99, bracket=(200, math.inf))
    assert plain.peak is curve[1] and plain.reason == "" and plain.advice == []


def test_nothing_within_the_bound_advises_a_lower_rate_or_a_looser_bound() -> None:
    curve = [_probe(64, False, "INVALID", "UNSTABLE"), _probe(32, False, "INVALID", "UNSTABLE")]
    result = conclude(curve, latency_bound_ms=50, percentile=99, bracket=(0, 32))
    assert result.peak is None and result.within_bound is None
    assert result.reason.startswith("none of the 2 probes met p99 <= 50 ms; the lowest rate, 32.0")
    assert result.advice == [
        "a lower --start-qps, below 32 (the lowest rate probed)",
        "a looser --latency-bound-ms, above 500.0 (p99 at 32.0 QPS)",
    ]


def test_unjudged_probes_within_the_bound_do_not_become_the_peak() -> None:
    def probe(qps: float) -> Probe:
        # Meets the bound up to 137/s, but no run is long enough to be judged.
        return _probe(qps, qps <= 137, "INVALID", "INSUFFICIENT", duration_needed_s=3.0)

    result = search_peak(probe, start_qps=100, latency_bound_ms=50, tolerance=0.1)
    assert result.peak is None and result.within_bound is not None
    assert result.within_bound.qps <= 137 < result.bracket[1]


def test_failed_samples_are_named_before_any_setting() -> None:
    curve = [_probe(32, False, "INVALID", "UNSTABLE", failed_samples=40)]
    result = conclude(curve, latency_bound_ms=50, percentile=99, bracket=(0, 32))
    assert result.advice[0] == "fix the backend first: 40 samples failed (see the probes' runs)"


def test_the_service_search_takes_the_embedded_searchs_steps() -> None:
    """next_step replays search_peak: the rate it asks for after each stored probe."""
    assert next_step([], start_qps=100, latency_bound_ms=50) == 100
    passed = [_probe(100, True, "VALID", "STABLE")]
    assert next_step(passed, start_qps=100, latency_bound_ms=50) == 200
    failed = [*passed, _probe(200, False, "VALID", "STABLE")]
    assert next_step(failed, start_qps=100, latency_bound_ms=50) == 150
    done = next_step(failed, start_qps=100, latency_bound_ms=50, max_probes=2)
    assert not isinstance(done, float) and done.peak is not None and done.peak.qps == 100
    with pytest.raises(ValueError, match="probe 300 QPS stored where 200 was due"):
        wrong = [*passed, _probe(300, True, "VALID", "STABLE")]
        next_step(wrong, start_qps=100, latency_bound_ms=50)
