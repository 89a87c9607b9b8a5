"""vLLM's CPU server on the tiny model: what the generative workload relies on.

Streamed completions and chat completions carry as many tokens as ``usage`` says when the
length is forced, and ``vllm bench serve`` (the reference the generative benchmark compares
with) runs from the server's virtualenv against it. Chunks may carry more than one token
(vLLM merges the tokens a slow reader has not taken yet), so tokens are counted from the
per-token logprobs, never from the number of events.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.vllm_server import VllmEndpoint, bench_serve_command, server_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]
OUTPUT_TOKENS = 24
BENCH_TIMEOUT_S = 300


def _stream(endpoint: VllmEndpoint, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON events of one streamed request, up to ``[DONE]`` (which must come)."""
    body = body | {
        "model": endpoint.model,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    events: list[dict[str, Any]] = []
    with httpx.stream("POST", f"{endpoint.url}{path}", json=body, timeout=60) as response:
        response.raise_for_status()
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            data = line.removeprefix("data: ")
            if data == "[DONE]":
                return events
            events.append(json.loads(data))
    raise AssertionError(f"the stream ended without [DONE] after {len(events)} events")


def _usage(events: list[dict[str, Any]]) -> dict[str, int]:
    # With include_usage, the last event has no choices and the usage of the whole request.
    assert events[-1]["choices"] == []
    return dict(events[-1]["usage"])


def test_streamed_completion_has_the_forced_length(vllm_server: VllmEndpoint) -> None:
    events = _stream(
        vllm_server,
        "/v1/completions",
        {"prompt": "kalo mi nu re", "max_tokens": OUTPUT_TOKENS, "ignore_eos": True, "logprobs": 0},
    )
    choices = [choice for event in events for choice in event["choices"]]
    tokens = sum(len(choice["logprobs"]["tokens"]) for choice in choices if choice["logprobs"])
    assert tokens == _usage(events)["completion_tokens"] == OUTPUT_TOKENS
    assert choices[-1]["finish_reason"] == "length"
    assert "".join(choice["text"] for choice in choices)


def test_streamed_chat_completion_has_the_forced_length(vllm_server: VllmEndpoint) -> None:
    body = {
        "messages": [{"role": "user", "content": "sa ti vo ze"}],
        "max_tokens": OUTPUT_TOKENS,
        "min_tokens": OUTPUT_TOKENS,
        "logprobs": True,
    }
    events = _stream(vllm_server, "/v1/chat/completions", body)
    choices = [choice for event in events for choice in event["choices"]]
    tokens = sum(len(choice["logprobs"]["content"]) for choice in choices if choice["logprobs"])
    assert tokens == _usage(events)["completion_tokens"] == OUTPUT_TOKENS
    assert choices[-1]["finish_reason"] == "length"
    assert "".join(choice["delta"].get("content") or "" for choice in choices)


def test_vllm_bench_serve_runs_from_the_virtualenv(
    vllm_server: VllmEndpoint, tmp_path: Path
) -> None:
    """The reference command of benchmarks/generative/README.md, on four JSONL prompts."""
    prompts = tmp_path / "prompts.jsonl"
    lines = ["kalo mi nu", "bra sti qu ze 12", "nu re ti, vo sa", "sti 77 kazelo!"]
    prompts.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in lines))
    command = bench_serve_command(
        *("--backend", "vllm", "--base-url", vllm_server.url, "--model", vllm_server.model),
        *("--tokenizer", str(vllm_server.model_dir), "--dataset-name", "custom"),
        *("--dataset-path", str(prompts), "--skip-chat-template", "--custom-output-len", "8"),
        *("--num-prompts", "4", "--request-rate", "2", "--ignore-eos", "--seed", "0"),
        *("--save-result", "--result-dir", str(tmp_path), "--result-filename", "result.json"),
    )
    done = subprocess.run(
        command, env=server_env(), capture_output=True, text=True, timeout=BENCH_TIMEOUT_S
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads((tmp_path / "result.json").read_text())
    assert (result["completed"], result["failed"]) == (4, 0)
    assert result["total_output_tokens"] == 4 * 8
    assert result["median_ttft_ms"] > 0 and result["output_throughput"] > 0
