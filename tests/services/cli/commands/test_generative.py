"""`benchstack generative` as a user runs it: a saved tiny Llama, 80 columns."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import benchstack
from tests.support.tiny_llm import tiny_llm


def test_server_bounds_that_cannot_be_met_print_invalid_and_why(
    data_dir: Path, tmp_path: Path
) -> None:
    model = tiny_llm(tmp_path / "model")
    result = benchstack(
        data_dir, "generative", str(model), "--scenario", "server", "--target-qps", "20",
        "--ttft-ms", "0.01", "--tpot-ms", "0.01", "--duration", "0.5", "--prompts", "4",
        "--input-tokens", "uniform:4:12", "--output-tokens", "4", columns=80,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "LoadGen: INVALID" in result.stdout
    assert "TTFT constrain not met" in result.stdout
    for figure in ("TTFT p50 (ms)", "TPOT p50 (ms)", "output tokens/s", "goodput req/s"):
        assert figure in result.stdout


def test_json_and_a_refused_option(data_dir: Path) -> None:
    result = benchstack(
        data_dir, "generative", "--duration", "0.3", "--prompts", "2", "--input-tokens", "4",
        "--output-tokens", "3", "--min-queries", "4", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["requests"]["completed"] >= 4
    assert document["figures"]["output_tokens_per_s"]["estimate"] > 0
    refused = benchstack(data_dir, "generative", "--output-tokens", "uniform:9")
    assert refused.returncode == 1
    assert "output_tokens: 'uniform:9' is not a length" in refused.stderr
