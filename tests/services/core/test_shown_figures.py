"""The one rule for a run's figures: each with its verdicts and interval, never an Offline
latency, nothing LoadGen did not measure."""

from __future__ import annotations

from services.core.shown_figures import (
    NO_INTERVALS_NOTE,
    figure_named,
    figure_text,
    host_verdict,
    shown_figures,
)
from tests.support.shown_runs import BUSY_HOST, stored_report


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
