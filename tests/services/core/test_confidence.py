"""Bootstrap intervals: within a run over its stability windows, over repeats over runs."""

from __future__ import annotations

import numpy as np
import pytest

from services.campaigns.drive import run_repeats
from services.cli.bench_options import BenchOptions
from services.core.confidence import (
    MIN_UNITS,
    Confidence,
    Interval,
    differ,
    run_confidence,
    window_confidence,
)
from services.core.recorded_events import RecordedEvents, recorded_events
from services.embedded.bench import run_bench
from shared.settings import Settings

TINY = "tests/fixtures/tiny_cnn.yaml"


def _events(scenario: str, windows: int, per_window: int, seed: int) -> RecordedEvents:
    """A steady SUT: one sample per event, latencies drawn around 2 ms, back to back."""
    rng = np.random.default_rng(seed)
    latencies = rng.gamma(20.0, 0.1e6, size=windows * per_window).astype(np.int64)
    finished = np.cumsum(latencies)
    return recorded_events(
        scenario=scenario,
        completions=[(int(f), 1) for f in finished],
        latencies_ns=latencies,
        arrivals_ns=finished - latencies,
    )


def _width(interval: Interval) -> float:
    assert interval.low is not None and interval.high is not None
    return interval.high - interval.low


def test_intervals_of_a_real_run_contain_its_estimates(settings: Settings) -> None:
    request = BenchOptions(
        model=TINY,
        framework="null",
        scenario="single-stream",
        duration=1.0,
        samples=16,
        option=["service_time_ms=1"],
    ).request()
    report = run_bench(request, settings)
    confidence = Confidence.from_dict(report["confidence"])
    assert confidence.basis == "windows" and confidence.units == 5
    for name, interval in confidence.figures.items():
        assert interval.given, (name, interval.reason)
        assert interval.low is not None and interval.high is not None
        assert interval.low <= interval.estimate <= interval.high, name  # type: ignore[operator]
    # The window estimate of throughput is LoadGen's own figure to within a window's ramp.
    sps = report["performance"]["samples_per_second"]
    assert confidence.figures["samples_per_second"].estimate == pytest.approx(sps, rel=0.05)


def test_more_windows_of_the_same_size_give_narrower_intervals() -> None:
    few = window_confidence(_events("single-stream", 5, 200, seed=1), windows=5)
    many = window_confidence(_events("single-stream", 40, 200, seed=1), windows=40)
    for name in ("samples_per_second", "latency_mean", "latency_p50", "latency_p90"):
        assert _width(many.figures[name]) < _width(few.figures[name]), name


def test_the_same_inputs_and_seed_give_the_same_interval() -> None:
    events = _events("server", 5, 300, seed=2)
    first = window_confidence(events, seed=7)
    assert window_confidence(events, seed=7) == first
    assert window_confidence(events, seed=8) != first


def test_too_few_samples_for_a_percentile_say_how_many_it_needs() -> None:
    confidence = window_confidence(_events("server", 5, 40, seed=3))
    p99 = confidence.figures["latency_p99"]
    assert not p99.given and "200 samples" in p99.reason and "needs 500" in p99.reason
    assert confidence.figures["latency_p50"].given


def test_too_few_events_give_no_interval_and_the_reason() -> None:
    confidence = window_confidence(_events("single-stream", 1, 6, seed=4))
    assert confidence.units == 0
    assert all(not i.given for i in confidence.figures.values())
    assert (
        "6 completion events are too few for 5 windows" in confidence.figures["latency_p50"].reason
    )


def test_offline_latency_gets_no_interval() -> None:
    confidence = window_confidence(_events("offline", 5, 100, seed=5))
    assert confidence.figures["samples_per_second"].given
    assert "place in the queue" in confidence.figures["latency_p99"].reason


def test_out_of_range_settings_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="--resamples: 5 must lie between"):
        window_confidence(_events("server", 5, 10, seed=6), resamples=5)
    with pytest.raises(ValueError, match="windows: 3 must lie between"):
        window_confidence(_events("server", 5, 10, seed=6), windows=3)


def test_repeats_get_an_interval_over_runs_from_five_valid_runs(settings: Settings) -> None:
    request = BenchOptions(
        model=TINY,
        framework="null",
        scenario="single-stream",
        duration=0.3,
        samples=8,
        option=["service_time_ms=1"],
    ).request()
    reports, _ = run_repeats(request, MIN_UNITS, lambda r: run_bench(r, settings))
    assert all(r["performance"]["validity"]["result"] == "VALID" for r in reports)
    over_runs = run_confidence(reports)
    assert over_runs.basis == "runs" and over_runs.units == MIN_UNITS
    for name, interval in over_runs.figures.items():
        assert interval.low <= interval.estimate <= interval.high, name  # type: ignore[operator]
    fewer = run_confidence(reports[:3])
    reason = fewer.figures["samples_per_second"].reason
    assert not fewer.figures["samples_per_second"].given and "--repeats 5" in reason


def test_differ_only_when_the_intervals_do_not_overlap() -> None:
    a = Interval(estimate=10.0, low=9.0, high=11.0)
    assert differ(a, Interval(estimate=13.0, low=12.0, high=14.0))[0] == "differ"
    assert differ(a, Interval(estimate=11.0, low=10.5, high=12.0))[0] == "within their intervals"
    verdict, why = differ(a, Interval(estimate=None, reason="INVALID"))
    assert verdict == "cannot say" and why == "INVALID"


def test_runs_that_are_not_valid_ask_for_valid_runs_not_more_repeats() -> None:
    from services.core.confidence import run_confidence

    invalid = {"performance": {"validity": {"result": "INVALID"}}}
    few = run_confidence([invalid] * 2).figures
    many = run_confidence([invalid] * 5).figures
    assert all("--repeats 5 or more" in f.reason for f in few.values())
    assert all("make the runs VALID first" in f.reason for f in many.values())
    assert not any("--repeats" in f.reason for f in many.values())
