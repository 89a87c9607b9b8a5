"""Sweeps of generative runs on a paced engine (fixed seconds per token): a rate sweep's
points and a concurrency sweep whose throughput follows the workers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from rich.console import Console

from services.core.campaigns.group import InvalidCampaign
from services.workloads.generative.campaign_render import print_sweep
from services.workloads.generative.options import GenerativeOptions
from services.workloads.generative.run import measure_loaded
from services.workloads.generative.sweep import POINT_FIGURES, plan, sweep
from services.workloads.generative.transformers_engine import load_tokenizer
from tests.support.paced_engine import PacedEngine


@pytest.fixture(scope="module")
def measure() -> Iterator[Any]:
    tokenizer = load_tokenizer("tiny-llama")
    engine = PacedEngine(first_s=0.003, per_token_s=0.001)
    yield lambda options: measure_loaded(engine, tokenizer, options)


def run(**settings: Any) -> GenerativeOptions:
    shape: dict[str, Any] = {"prompts": 8, "input_tokens": "4", "output_tokens": "4"}
    return GenerativeOptions.model_validate(shape | {"min_duration_s": 0.5} | settings)


def test_a_rate_sweep_gives_a_point_per_rate_with_intervals(measure: Any) -> None:
    base = run(scenario="server", ttft_ms=50.0, tpot_ms=10.0, percentile=50)
    curve, documents = sweep(base, "target_qps", [60.0, 30.0], measure)
    assert [p.value for p in curve.points] == [30.0, 60.0]  # in value order
    assert [d["options"]["target_qps"] for d in documents] == [60.0, 30.0]  # as run
    for point in curve.points:
        assert set(point.figures) == set(POINT_FIGURES)
        tokens = point.figures["output_tokens_per_s"]
        assert tokens["unit"] == "tokens/s"
        assert tokens["low"] <= tokens["estimate"] <= tokens["high"]
        assert point.figures["ttft_p50"]["estimate"] >= 3.0  # the engine's first token
        assert point.validity in ("VALID", "INVALID") and point.failed_requests == 0
    slow, fast = (p.figures["requests_per_s"]["estimate"] for p in curve.points)
    assert fast > slow * 1.4  # the rate is what LoadGen asked for
    console = Console(width=80, record=True)
    print_sweep(console, curve)
    text = console.export_text()
    assert "server sweep of target_qps" in text and "TTFT p50" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_a_concurrency_sweep_scales_with_the_workers(measure: Any) -> None:
    curve, _ = sweep(run(scenario="offline"), "workers", [1, 4], measure)
    one, four = (p.figures["output_tokens_per_s"]["estimate"] for p in curve.points)
    assert four > 2.5 * one  # four workers on an engine that only sleeps


def test_refused_sweeps_name_their_field() -> None:
    with pytest.raises(InvalidCampaign, match="target_qps is a server setting"):
        plan(run(), "target_qps", [1.0])
    with pytest.raises(InvalidCampaign, match="1.5; accepted: whole numbers"):
        plan(run(), "workers", [1.5])
    with pytest.raises(InvalidCampaign, match="2 is listed twice"):
        plan(run(), "batch_size", [2, 2])
    with pytest.raises(InvalidCampaign, match="'seed'; accepted: target_qps, workers"):
        plan(run(), "seed", [1])
