from __future__ import annotations

from pathlib import Path

from services.core.loadgen_logs import parse_detail, parse_summary
from services.workloads.generative.bounds import token_bounds
from services.workloads.generative.engine import GenerationRequest
from services.workloads.generative.loadgen_run import RunPlan, run_test
from tests.support.paced_engine import FAILING, PacedEngine

PROMPTS = [GenerationRequest(prompt_ids=(1, 2, 3), max_tokens=6) for _ in range(8)]


def test_single_stream_reports_token_latencies(tmp_path: Path) -> None:
    plan = RunPlan("single-stream", min_duration_s=0.3, min_query_count=64)
    outcome = run_test(PacedEngine(), PROMPTS, plan, tmp_path)
    detail = parse_detail(outcome.logs["mlperf_log_detail.txt"])
    assert detail["result_validity"] == "VALID"
    # Each request: ~2 ms to its first token, then 5 tokens 1 ms apart.
    assert 1.5e6 < detail["result_first_token_50.00_percentile_latency_ns"] < 20e6
    assert 0.9e6 < detail["result_time_per_output_token_50.00_percentile_ns"] < 10e6
    assert len(outcome.records) >= 64
    assert all(r.output_tokens == 6 and not r.failure for r in outcome.records)


def test_server_bounds_that_cannot_be_met_are_invalid(tmp_path: Path) -> None:
    bounds = token_bounds(None, ttft_ms=0.01, tpot_ms=0.01)
    plan = RunPlan("server", min_duration_s=0.5, min_query_count=10, target_qps=40, bounds=bounds)
    outcome = run_test(PacedEngine(), PROMPTS, plan, tmp_path)
    summary = parse_summary(outcome.logs["mlperf_log_summary.txt"])
    assert summary["Result is"] == "INVALID"
    assert "TTFT constrain not met" in outcome.logs["mlperf_log_summary.txt"]
    assert outcome.target_qps == 40


def test_offline_batches_and_counts_failures(tmp_path: Path) -> None:
    # The warm-up's batch is the first four prompts; the last two fail.
    prompts = PROMPTS[:6] + [GenerationRequest((FAILING, 1), max_tokens=6)] * 2
    plan = RunPlan("offline", min_duration_s=0.2, min_query_count=12)
    outcome = run_test(PacedEngine(max_batch=4), prompts, plan, tmp_path)
    assert len(outcome.records) >= 12
    failed = [r for r in outcome.records if r.failure]
    assert failed and all(r.failure == "scripted failure" for r in failed)
    assert "Tokens per second" in outcome.logs["mlperf_log_summary.txt"]
