from __future__ import annotations

from pathlib import Path

import pytest

from services.workloads.generative.bounds import token_bounds
from services.workloads.generative.engine import GenerationRequest
from services.workloads.generative.figures import request_counts, run_figures
from services.workloads.generative.loadgen_run import RunPlan, run_test
from services.workloads.generative.stability import run_stability
from services.workloads.generative.sut import RequestRecord
from services.workloads.generative.verdict import loadgen_verdict
from tests.support.paced_engine import PacedEngine

S = 1_000_000_000


def test_tokens_per_second_is_tokens_over_time_not_a_mean_of_rates() -> None:
    records = [
        RequestRecord(0, 4, issued_ns=0, first_token_ns=S // 10, end_ns=S, output_tokens=100),
        RequestRecord(1, 6, issued_ns=0, first_token_ns=S // 5, end_ns=2 * S, output_tokens=10),
    ]
    figures = run_figures(records, "server", None)
    assert figures["output_tokens_per_s"].estimate == pytest.approx(55.0)  # not 52.5
    assert figures["total_tokens_per_s"].estimate == pytest.approx(60.0)
    assert figures["requests_per_s"].estimate == pytest.approx(1.0)
    assert figures["ttft_p50"].estimate == pytest.approx(100.0)
    # TPOT as LoadGen has it: (end - first token) / (tokens - 1).
    assert figures["tpot_p99"].estimate == pytest.approx(1800 / 9)
    assert "a p50 interval needs 10" in figures["ttft_p50"].reason and not figures["ttft_p50"].given
    assert "no TTFT/TPOT objectives" in figures["goodput"].reason


def test_failed_requests_count_nothing_but_are_named() -> None:
    records = [
        RequestRecord(
            i,
            3,
            issued_ns=i * S,
            first_token_ns=i * S + 1,
            end_ns=(i + 1) * S,
            output_tokens=8,
            failure="HTTP 500" if i % 4 == 3 else "",
        )
        for i in range(40)
    ]
    figures = run_figures(records, "single-stream", token_bounds(None))
    counts = request_counts(records)
    assert (counts["completed"], counts["failed"], counts["failures"]) == (30, 10, {"HTTP 500": 10})
    assert figures["requests_per_s"].estimate == pytest.approx(30 / 40)
    interval = figures["output_tokens_per_s"]
    assert interval.given and interval.low <= interval.estimate <= interval.high  # type: ignore[operator]


def _server_run(tmp_path: Path, ttft_ms: float, tpot_ms: float) -> tuple[dict, dict]:
    prompts = [GenerationRequest((1, 2, 3), max_tokens=6)] * 8
    bounds = token_bounds(None, ttft_ms=ttft_ms, tpot_ms=tpot_ms)
    plan = RunPlan("server", 0.5, min_query_count=30, target_qps=60, bounds=bounds)
    outcome = run_test(PacedEngine(), prompts, plan, tmp_path)
    return loadgen_verdict(outcome.logs), run_figures(outcome.records, "server", bounds)


def test_bounds_that_cannot_be_met_are_invalid_with_loadgens_reason(tmp_path: Path) -> None:
    verdict, figures = _server_run(tmp_path, ttft_ms=0.01, tpot_ms=0.01)
    assert verdict["validity"] == "INVALID"
    assert any("TTFT constrain not met" in r for r in verdict["reasons"]), verdict["reasons"]
    assert verdict["figures"]["ttft_p50"] > 0.01
    assert figures["goodput"].estimate == 0


def test_goodput_counts_requests_meeting_both_objectives(tmp_path: Path) -> None:
    _, figures = _server_run(tmp_path, ttft_ms=10_000, tpot_ms=10_000)
    assert figures["goodput"].estimate == pytest.approx(figures["requests_per_s"].estimate)


def test_missing_logs_say_so() -> None:
    verdict = loadgen_verdict({})
    assert verdict["validity"] == "MISSING" and "logs are missing" in verdict["reasons"][0]


def test_inter_token_latency_pools_every_gap(tmp_path: Path) -> None:
    prompts = [GenerationRequest((1, 2, 3), max_tokens=6)] * 8
    plan = RunPlan("single-stream", 0.2, min_query_count=64)
    outcome = run_test(PacedEngine(per_token_s=0.002), prompts, plan, tmp_path)
    assert all(len(r.gaps_ns) == 5 for r in outcome.records)  # 6 tokens, 5 gaps after the first
    itl = run_figures(outcome.records, "single-stream", None)["itl_p50"]
    assert itl.given and 1.9 < itl.estimate < 20  # type: ignore[operator]
    assert itl.low <= itl.estimate <= itl.high  # type: ignore[operator]
    # Judged (this machine's load decides which way), not too short to judge.
    stability = run_stability(outcome.records, "single-stream", concurrency=1)
    assert stability.verdict in ("STABLE", "UNSTABLE") and len(stability.windows) == 5


def test_a_short_server_run_is_too_short_to_judge() -> None:
    records = [RequestRecord(i, 3, issued_ns=i * S, end_ns=i * S + 5) for i in range(30)]
    stability = run_stability(records, "server", concurrency=1)
    assert stability.verdict == "INSUFFICIENT" and "run longer" in stability.reasons[0]
