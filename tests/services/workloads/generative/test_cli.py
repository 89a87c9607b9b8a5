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


def test_an_openai_server_with_a_broken_stream_counts_failed_requests(data_dir: Path) -> None:
    from services.workloads.generative.loadgen_run import WARM_UP_PASSES
    from tests.support.streaming_server import streaming_server

    with streaming_server(token_s=0.001) as server:
        url = server.url  # type: ignore[attr-defined]
        server.mode = "normal"
        ok = benchstack(
            data_dir, "generative", "--engine", "openai", "--url", url, "--served-model", "tiny",
            "--scenario", "server", "--target-qps", "30", "--duration", "0.5", "--prompts", "4",
            "--input-tokens", "6", "--output-tokens", "5", "--api", "chat", columns=80,
        )  # fmt: skip
        # Dying after the warm-up (WARM_UP_PASSES requests at most) and two measured ones.
        server.break_after = len(server.received) + WARM_UP_PASSES + 2
        dying = benchstack(
            data_dir, "generative", "--engine", "openai", "--url", url, "--duration", "0.3",
            "--prompts", "2", "--min-queries", "20", "--output-tokens", "5", "--json",
        )  # fmt: skip
        server.mode = "break"
        broken = benchstack(data_dir, "generative", "--engine", "openai", "--url", url)
    assert ok.returncode == 0, ok.stderr + ok.stdout
    assert f"tiny  openai at {url}  server" in ok.stdout and "TTFT p50 (ms)" in ok.stdout
    assert dying.returncode == 1, dying.stderr
    requests = json.loads(dying.stdout)["requests"]
    assert requests["failed"] >= 8 and requests["completed"] >= 2
    assert requests["failures"] == {
        "the stream broke before [DONE] after 2 tokens": requests["failed"]
    }
    assert broken.returncode == 1
    assert "engine: the warm-up request failed: the stream broke" in broken.stderr
