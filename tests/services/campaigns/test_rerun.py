"""Rerun verdicts: a change is only called "no change" when the band could have shown one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from services.core.campaigns.rerun import (
    SMALLEST_CHANGE_OF_INTEREST,
    compare,
    figure_verdict,
    overall_verdict,
)


def _perf(window_sps: list[float], *, run_id: str = "x") -> dict[str, Any]:
    """An Offline report whose measurement windows ran at ``window_sps`` samples/s."""
    sps = sorted(window_sps)[len(window_sps) // 2]
    return {
        "run_id": run_id,
        "performance": {
            "scenario": "Offline",
            "samples_per_second": sps,
            "latency": {"mean_ns": 1e6, "percentiles_ns": {"p50": 1e6, "p90": 1e6, "p99": 1e6}},
            "validity": {"result": "VALID"},
        },
        "stability": {
            "verdict": "STABLE",
            "windows": [{"samples_per_second": v, "median_latency_ms": 1.0} for v in window_sps],
        },
    }


def test_figure_verdict_rule() -> None:
    assert figure_verdict(-0.20, 0.05, better=False) == ("worse", "")
    assert figure_verdict(0.20, 0.05, better=True) == ("better", "")
    assert figure_verdict(0.03, 0.05, better=True) == ("within noise", "")
    # The case: -25.5 % inside a ±47.9 % band is not "within noise".
    verdict, why = figure_verdict(-0.255, 0.479, better=False)
    assert verdict == "inconclusive"
    assert why == "noise band ±47.9% is wider than the 5% a user would care about"
    # The boundary: a band of exactly the smallest change of interest can still show one.
    assert figure_verdict(0.0, SMALLEST_CHANGE_OF_INTEREST, better=True)[0] == "within noise"


def test_a_wide_band_makes_the_comparison_inconclusive() -> None:
    # Windows swinging between 60 and 140 samples/s: the band is far wider than 5 %.
    noisy = [100.0, 60.0, 140.0, 60.0, 140.0]
    original = _perf(noisy)
    rerun = _perf([v * 0.9 for v in noisy], run_id="y")  # 10 % slower, inside the band
    comparison = compare(original, [rerun])
    delta = comparison.figures[0]
    assert delta.within and delta.band > 0.3
    assert delta.verdict == "inconclusive" and "wider than the 5%" in delta.explanation
    assert comparison.verdict == "inconclusive"
    assert "inconclusive" in comparison.rule and "5%" in comparison.rule


def test_overall_verdict_outside_beats_inconclusive_beats_within() -> None:
    steady = compare(_perf([100.0] * 5), [_perf([100.0] * 5)]).figures
    noisy = compare(_perf([100.0, 60.0, 140.0, 60.0, 140.0]), [_perf([100.0] * 5)]).figures
    slower = compare(_perf([100.0] * 5), [_perf([70.0] * 5)]).figures
    assert [d.verdict for d in (*steady, *noisy, *slower)] == [
        "within noise",
        "inconclusive",
        "worse",
    ]
    assert overall_verdict(steady) == "within noise"
    assert overall_verdict([*steady, *noisy]) == "inconclusive"
    assert overall_verdict([*steady, *noisy, *slower]) == "outside noise"
    assert overall_verdict([]) == "inconclusive"  # nothing comparable shows no change


def test_accuracy_reruns_that_disagree_are_inconclusive() -> None:
    def report(top1: float) -> dict[str, Any]:
        performance = {"validity": {"result": "VALID"}}
        return {"run_id": "a", "accuracy": {"top1": top1, "top5": None}, "performance": performance}

    same = compare(report(90.0), [report(90.0)])
    assert same.verdict == "within noise"
    disagree = compare(report(90.0), [report(90.0), report(90.0), report(85.0)])
    assert disagree.figures[0].verdict == "inconclusive"
    assert "reruns disagree" in disagree.figures[0].explanation
    worse = compare(report(90.0), [report(80.0)])
    assert worse.figures[0].verdict == "worse" and worse.verdict == "outside noise"


def test_rerun_cli_prints_the_verdict_and_its_rule(data_dir: Path) -> None:
    env = {**os.environ, "BENCHSTACK_DATA_DIR": str(data_dir), "COLUMNS": "250"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "services.cli.main", *args],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip

    bench = cli(
        "bench", "tests/fixtures/tiny_cnn.yaml", "-f", "null", "-o", "service_time_ms=5",
        "--duration", "0.5", "--samples", "16", "--json",
    )  # fmt: skip
    assert bench.returncode == 0, bench.stderr
    run_id = json.loads(bench.stdout)["run_id"][:8]
    result = cli("rerun", run_id)
    assert result.returncode == 0, result.stderr
    verdict_line = next(line for line in result.stdout.splitlines() if line.startswith("verdict:"))
    verdict = verdict_line.removeprefix("verdict: ")
    assert verdict in {"within noise", "inconclusive", "outside noise"}
    # The figure rows carry the same words, and the rule that decided is printed.
    assert ("inconclusive (noise band ±" in result.stdout) == (verdict == "inconclusive")
    assert "rule: a change outside its noise band is better/worse" in result.stdout


@pytest.mark.parametrize("band", [0.051, 0.2, 0.479])
def test_any_band_wider_than_the_threshold_cannot_say_within_noise(band: float) -> None:
    assert figure_verdict(0.0, band, better=True)[0] == "inconclusive"
