"""The one rule for a run's figures: each with its verdicts and interval, never an Offline
latency, nothing LoadGen did not measure."""

from __future__ import annotations

from typing import Any

from services.core.shown_figures import (
    NO_INTERVALS_NOTE,
    figure_named,
    figure_text,
    host_verdict,
    shown_figures,
)

BUSY_HOST = {
    "busy": True,
    "load": {
        "busy": True,
        "other_cpu_share": 0.55,
        "reason": "busy: other processes used 1.10 CPU-s per s (55% of 2 CPUs) during the run",
    },
}


def stored_report(scenario: str, *, host: dict[str, Any] | None = None) -> dict[str, Any]:
    """A LoadGen report as stored: p90 8.3 ms, 35.9 samples/s, intervals for both."""
    return {
        "run_id": "r1",
        "scenario": scenario,
        "performance": {
            "scenario": scenario,
            "validity": {"result": "VALID", "reasons": []},
            "latency": {
                "count": 100,
                "min_ns": 1e6,
                "mean_ns": 5e6,
                "max_ns": 9e6,
                "percentiles_ns": {"p50": 4e6, "p90": 8.3e6, "p99": None},
            },
            "samples_per_second": 35.9,
        },
        "stability": {"verdict": "UNSTABLE", "reasons": ["throughput spread 30%"]},
        "confidence": {
            "basis": "windows",
            "units": 10,
            "figures": {
                "samples_per_second": {"estimate": 36.0, "low": 34.1, "high": 37.2},
                "latency_p90": {"estimate": 8.2, "low": 7.9, "high": 8.6},
                "latency_p50": {"estimate": 4.0, "reason": "too few samples"},
            },
        },
        "host": host if host is not None else {"busy": False, "load": {"reason": "quiet: x"}},
    }


def test_a_busy_runs_figures_each_carry_busy_with_how_busy_and_their_verdicts() -> None:
    figures = shown_figures(stored_report("single_stream", host=BUSY_HOST))
    assert [f.name for f in figures] == [
        "samples_per_second",
        "latency_mean",
        "latency_p50",
        "latency_p90",
    ]  # p99 was not measured (a stored null): not a figure
    for figure in figures:
        assert figure.busy is True
        assert "55% of 2 CPUs" in figure.busy_note and not figure.busy_note.startswith("busy")
        assert (figure.validity, figure.stability) == ("VALID", "UNSTABLE")
    p90 = figure_named(figures, "latency_p90")
    assert p90 is not None and (p90.value, p90.low, p90.high) == (8.3, 7.9, 8.6)
    assert figure_text(p90, ".1f") == "8.3 [7.9, 8.6] BUSY"
    p50 = figure_named(figures, "latency_p50")
    assert p50 is not None and p50.low is None and p50.interval_note == "too few samples"


def test_offline_latencies_never_come_out() -> None:
    figures = shown_figures(stored_report("offline"))
    assert [f.name for f in figures] == ["samples_per_second"]
    assert figures[0].busy is False
    assert figure_text(figure_named(figures, "latency_p90")) == "-"


def test_an_old_run_says_what_it_lacks_and_an_outcome_has_no_loadgen_figures() -> None:
    old = stored_report("server", host={})
    del old["confidence"], old["stability"]
    figures = shown_figures(old)
    assert figures and all(f.interval_note == NO_INTERVALS_NOTE for f in figures)
    assert all(f.busy is None and f.stability == "UNKNOWN" for f in figures)
    assert shown_figures({"kind": "bricks", "bricks": {"methods": []}}) == []
    assert shown_figures({"run_id": "accuracy-only"}) == []


def test_an_overlapped_measurement_is_busy_too() -> None:
    verdict = host_verdict({"busy": False, "overlapped": True, "overlapped_with": ["abcdef0123"]})
    assert verdict.busy is True and "overlapped another measurement" in verdict.note
    assert "abcdef01" in verdict.note
