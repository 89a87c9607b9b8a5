from __future__ import annotations

from pathlib import Path

import pytest

from services.core.loadgen_logs import parse_detail
from services.workloads.generative.engine import GenerationRequest
from services.workloads.generative.loadgen_run import RunPlan, run_test
from services.workloads.generative.transformers_engine import TransformersEngine


class Tokens:
    def __init__(self) -> None:
        self.count = 0

    def token(self, count: int = 1) -> None:
        self.count += count


def test_a_static_batch_streams_each_request_its_exact_length(tiny_llm_dir: Path) -> None:
    engine = TransformersEngine.load(str(tiny_llm_dir), max_batch=2)
    tokenizer = engine.tokenizer
    short = tuple(tokenizer("kalo")["input_ids"])
    long = tuple(tokenizer("kalo mine ru tashi po vedenar")["input_ids"])
    sinks = [Tokens(), Tokens()]
    results = engine.generate(
        [GenerationRequest(short, max_tokens=3), GenerationRequest(long, max_tokens=7)], sinks
    )
    assert [r.output_tokens for r in results] == [3, 7]
    assert [s.count for s in sinks] == [3, 7]
    assert all(not r.failed and len(r.token_ids) == r.output_tokens for r in results)
    assert all(0 <= t < 512 for r in results for t in r.token_ids)


def test_a_prompt_past_the_models_positions_fails_with_its_reason(tiny_llm_dir: Path) -> None:
    engine = TransformersEngine.load(str(tiny_llm_dir))
    result = engine.generate([GenerationRequest((5,) * 1100, max_tokens=2)], [Tokens()])[0]
    assert result.output_tokens == 0
    assert result.failure == "prompt + output: 1102 tokens is past the model's 1024 positions"


def test_a_missing_directory_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="model: .* is neither 'tiny-llama' nor a directory"):
        TransformersEngine.load(str(tmp_path / "absent"))


def test_offline_through_loadgen(tiny_llm_dir: Path, tmp_path: Path) -> None:
    engine = TransformersEngine.load(str(tiny_llm_dir), max_batch=4)
    prompts = [GenerationRequest(tuple(range(10, 18 + i)), max_tokens=4) for i in range(6)]
    outcome = run_test(engine, prompts, RunPlan("offline", 0.2, min_query_count=8), tmp_path)
    detail = parse_detail(outcome.logs["mlperf_log_detail.txt"])
    # Its validity depends on this machine's load (planned from warm-up): not asserted.
    assert detail["result_tokens_per_second"] > 0
    assert len(outcome.records) >= 8
    assert all(r.output_tokens == 4 and not r.failure for r in outcome.records)
