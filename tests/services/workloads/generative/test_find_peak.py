"""Find-peak on generative runs against an engine of known capacity: a paced engine (fixed
seconds to the first token and per token), two workers, LoadGen deciding the schedule."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from rich.console import Console

from services.workloads.generative.campaign_render import print_peak
from services.workloads.generative.find_peak import (
    GenerativeSearch,
    NextRun,
    find_peak,
    next_run,
)
from services.workloads.generative.options import GenerativeOptions
from services.workloads.generative.run import measure_loaded
from services.workloads.generative.transformers_engine import load_tokenizer
from tests.support.paced_engine import PacedEngine

FIRST_S, PER_TOKEN_S, OUTPUT_TOKENS, WORKERS = 0.003, 0.001, 3, 2
# Requests/s the engine can finish at most: each takes first + (tokens - 1) x per token.
CAPACITY = WORKERS / (FIRST_S + (OUTPUT_TOKENS - 1) * PER_TOKEN_S)


def server(**bounds: Any) -> GenerativeOptions:
    return GenerativeOptions(
        scenario="server",
        prompts=8,
        input_tokens="4",
        output_tokens=str(OUTPUT_TOKENS),
        workers=WORKERS,
        percentile=90,
        **bounds,
    )


@pytest.fixture(scope="module")
def measure() -> Iterator[Any]:
    tokenizer = load_tokenizer("tiny-llama")
    engine = PacedEngine(first_s=FIRST_S, per_token_s=PER_TOKEN_S)
    yield lambda options: measure_loaded(engine, tokenizer, options)


def test_the_peak_is_valid_and_below_the_engines_capacity(measure: Any) -> None:
    search = GenerativeSearch(start_qps=CAPACITY / 2, tolerance=0.3, max_probes=6)
    result, documents = find_peak(server(ttft_ms=30.0, tpot_ms=5.0), search, measure)
    assert result.verdict == "peak", (result.reason, [p.reason for p in result.curve])
    assert result.peak is not None
    assert result.peak.validity == "VALID"
    assert result.peak.stability != "INSUFFICIENT"
    # Below what the engine can finish; a busy host may push it well below the start rate.
    assert CAPACITY / 8 <= result.peak.qps < CAPACITY
    # Every probe is a Server run at its rate, sized for early stopping at p90.
    assert [d["group"]["qps"] for d in documents] == [p.qps for p in result.curve]
    assert all(d["options"]["scenario"] == "server" for d in documents)
    assert all(d["bounds"]["percentile"] == 90 for d in documents)
    assert any(not p.passed for p in result.curve)  # the search found the edge
    console = Console(width=80, record=True)
    print_peak(console, result, documents)
    text = console.export_text()
    assert f"peak: {result.peak.qps:.1f} requests/s (TTFT p90" in text
    assert "TTFT p90 <= 30 ms and TPOT p90 <= 5 ms, LoadGen VALID" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_bounds_no_rate_meets_say_why_and_what_to_change(measure: Any) -> None:
    # The first token takes 3 ms: a 1 ms TTFT bound is never met.
    search = GenerativeSearch(start_qps=40.0, max_probes=2, duration_s=0.5)
    warnings: list[str] = []
    result, documents = find_peak(
        server(ttft_ms=1.0, tpot_ms=5.0), search, measure, warnings.append
    )
    assert result.verdict == "no valid peak"
    assert result.peak is None and len(documents) == 2
    assert "none of the 2 probes met TTFT p90 <= 1 ms and TPOT p90 <= 5 ms" in result.reason
    assert "TTFT p90" in result.curve[0].reason
    assert any("--ttft-ms" in a for a in result.advice)
    assert not any("--tpot-ms" in a for a in result.advice)
    assert all(p.validity == "INVALID" for p in result.curve)
    assert warnings and "early stopping at p90" in warnings[0]


def test_without_a_start_rate_an_offline_run_comes_first() -> None:
    step = next_run(server(), GenerativeSearch(), [])
    assert isinstance(step, NextRun)
    assert step.options.scenario == "offline" and step.options.token_bounds() is None
    assert step.group["role"] == "capacity estimate"


def test_refused_settings_name_their_field() -> None:
    with pytest.raises(ValueError, match="percentile: 95; accepted: 50, 90, 99"):
        next_run(server(ttft_ms=30.0, tpot_ms=5.0).model_copy(update={"percentile": 95.0}),
                 GenerativeSearch(), [])  # fmt: skip
    with pytest.raises(ValueError, match="scenario: find-peak probes Server runs"):
        next_run(GenerativeOptions(), GenerativeSearch(), [])
