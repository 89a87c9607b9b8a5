from __future__ import annotations

from pathlib import Path

import pytest

from services.workloads.generative.engine import GenerationRequest
from services.workloads.generative.figures import request_counts
from services.workloads.generative.loadgen_run import RunPlan, run_test
from services.workloads.generative.openai_engine import OpenAIEngine
from tests.support.streaming_server import streaming_server

REQUEST = GenerationRequest((5, 6, 7), max_tokens=6, prompt_text="kalo mine ru")


class Tokens:
    def __init__(self) -> None:
        self.count = 0
        self.calls: list[int] = []

    def token(self, count: int = 1) -> None:
        self.count += count
        self.calls.append(count)


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_a_stream_is_counted_and_asks_for_exact_lengths(
    api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_KEY", "sk-test")
    with streaming_server() as server:
        engine = OpenAIEngine(server.url, "tiny", api=api, api_key_env="BENCH_KEY")  # type: ignore[attr-defined]
        sink = Tokens()
        result = engine.generate([REQUEST], [sink])[0]
        again = engine.generate([REQUEST], [Tokens()])[0]  # the same keep-alive connection
        engine.close()
    assert (result.output_tokens, result.failure, sink.count) == (6, "", 6)
    assert not again.failed
    path, headers, body = server.received[0]
    assert path == ("/v1/chat/completions" if api == "chat" else "/v1/completions")
    assert headers["Authorization"] == "Bearer sk-test"
    assert body["stream"] and body["ignore_eos"] and body["min_tokens"] == 6
    assert body["stream_options"] == {"include_usage": True}
    assert body["return_token_ids"]


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_an_event_of_several_tokens_counts_them_all(api: str, tmp_path: Path) -> None:
    """vLLM may merge tokens into one event: its token_ids say how many, and inter-token
    latency gets one gap per token, zero for those that came with another."""
    with streaming_server(token_s=0.002) as server:
        server.mode = "pairs"
        engine = OpenAIEngine(server.url, "tiny", api=api)  # type: ignore[attr-defined]
        sink = Tokens()
        result = engine.generate([REQUEST], [sink])[0]
        plan = RunPlan("single-stream", 0.1, min_query_count=4)
        outcome = run_test(engine, [REQUEST], plan, tmp_path)
        engine.close()
    assert (result.output_tokens, result.failure, sink.calls) == (6, "", [2, 2, 2])
    for record in outcome.records:
        assert not record.failure and len(record.gaps_ns) == 5
        assert [gap == 0 for gap in record.gaps_ns] == [True, False, True, False, True]
        assert sum(record.gaps_ns) <= (record.end_ns or 0) - (record.first_token_ns or 0)


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("break", "the stream broke before [DONE] after 2 tokens"),
        ("error", 'HTTP 503: {"error": "overloaded"}'),
        ("slow", "timed out after 0.3 s"),
        ("short", "3 of 6 tokens: the server stopped early (does it take ignore_eos/min_tokens?)"),
        ("usage", "6 of 6 tokens"),
    ],
)
def test_a_failed_request_says_why(mode: str, reason: str) -> None:
    with streaming_server() as server:
        server.mode = mode
        engine = OpenAIEngine(server.url, "tiny", timeout_s=0.3)  # type: ignore[attr-defined]
        result = engine.generate([REQUEST], [Tokens()])[0]
        server.mode = "normal"  # the engine recovers: a fresh connection where needed
        after = engine.generate([REQUEST], [Tokens()])[0]
        engine.close()
    if mode == "usage":  # usage above the chunks received: the server's count is taken
        assert (
            result.failure
            == "9 of 6 tokens: the server stopped early (does it take ignore_eos/min_tokens?)"
        )
    else:
        assert result.failure == reason
    assert not after.failed, after.failure


def test_a_server_that_is_gone_fails_requests_not_the_run(tmp_path: Path) -> None:
    with streaming_server() as server:
        url = server.url  # type: ignore[attr-defined]
        engine = OpenAIEngine(url, "tiny", timeout_s=1.0)
        engine.generate([REQUEST], [Tokens()])  # warm
    result = engine.generate([REQUEST], [Tokens()])[0]
    assert result.failed and result.failure.startswith("connection: ")


def test_concurrent_streams_through_loadgen(tmp_path: Path) -> None:
    with streaming_server(token_s=0.002) as server:
        engine = OpenAIEngine(server.url, "tiny")  # type: ignore[attr-defined]
        plan = RunPlan("server", 0.5, min_query_count=20, target_qps=40)
        outcome = run_test(engine, [REQUEST] * 4, plan, tmp_path, workers=8)
        engine.close()
    counts = request_counts(outcome.records)
    assert counts["failed"] == 0 and counts["completed"] >= 20
    assert counts["output_tokens"] == 6 * counts["completed"]


def test_the_server_is_described_with_the_run() -> None:
    with streaming_server() as server:
        engine = OpenAIEngine(server.url, "tiny")  # type: ignore[attr-defined]
        described = engine.describe()
        engine.close()
    assert described["version"] == {"version": "streaming-server-1"}
    assert described["models"] == [{"id": "tiny", "max_model_len": 1024}]
    gone = OpenAIEngine(described["url"], "tiny", timeout_s=0.5).describe()
    assert gone["version"].startswith("unavailable: ")


def test_a_kept_alive_connection_the_server_closed_is_opened_anew() -> None:
    # uvicorn (vLLM's server) closes a connection idle for 5 s; a SUT thread of a slow
    # Server run waits longer between requests: its next request must not fail for it.
    with streaming_server() as server:
        server.mode = "close_idle"  # type: ignore[attr-defined]
        engine = OpenAIEngine(server.url, "tiny")  # type: ignore[attr-defined]
        results = [engine.generate([REQUEST], [Tokens()])[0] for _ in range(3)]
        engine.close()
    assert [(r.output_tokens, r.failure) for r in results] == [(6, "")] * 3
    assert len(server.received) == 3  # each sent once to a server that read it
