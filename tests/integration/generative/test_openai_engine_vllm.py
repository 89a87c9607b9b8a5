"""The generative workload's ``openai`` engine against the real vLLM server: a Server run
on completions and on chat gives its figures with intervals and LoadGen's verdict, records
the server's version and configuration, and produces exactly the tokens asked; killing the
server mid-run ends the run with its failed requests counted and named, nothing hanging."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.workloads.generative.engine import GenerationRequest
from services.workloads.generative.loadgen_run import WARM_UP_PASSES
from services.workloads.generative.openai_engine import OpenAIEngine
from services.workloads.generative.options import GenerativeOptions
from services.workloads.generative.run import measure_generation
from tests.support.tiny_llm import tiny_llm
from tests.support.vllm_server import VllmEndpoint, VllmServer, venv_is_current

pytestmark = [pytest.mark.integration, pytest.mark.slow]
OUTPUT_TOKENS = 12
RUN_DEADLINE_S = 120.0


def _options(endpoint: VllmEndpoint, api: str, **overrides: Any) -> GenerativeOptions:
    settings: dict[str, Any] = {
        "engine": "openai",
        "model": str(endpoint.model_dir),  # the tokenizer the prompts are made with
        "url": endpoint.url,
        "served_model": endpoint.model,
        "api": api,
        "scenario": "server",
        "prompts": 8,
        "input_tokens": "16",
        "output_tokens": str(OUTPUT_TOKENS),
        "workers": 8,
        "target_qps": 8.0,
        "min_duration_s": 2.0,
        "min_query_count": 16,
        "ttft_ms": 60_000.0,  # bounds this machine meets: the verdict is LoadGen's to give
        "tpot_ms": 60_000.0,
        "percentile": 50.0,  # at p50, LoadGen's early stopping judges a few dozen requests
        "timeout_s": 30.0,
    }
    return GenerativeOptions(**(settings | overrides))


class _Calls:
    def __init__(self) -> None:
        self.calls: list[int] = []

    def token(self, count: int = 1) -> None:
        self.calls.append(count)


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_a_server_run_against_vllm(vllm_server: VllmEndpoint, api: str) -> None:
    document = measure_generation(_options(vllm_server, api))
    requests = document["requests"]
    assert requests["failed"] == 0, requests["failures"]
    assert requests["completed"] >= 16
    assert requests["output_tokens"] == OUTPUT_TOKENS * requests["completed"]
    figures = document["figures"]
    for name in ("ttft_p50", "tpot_p50", "itl_p50", "output_tokens_per_s"):
        figure = figures[name]
        assert figure["estimate"] > 0, (name, figure)
        assert figure["low"] <= figure["estimate"] <= figure["high"], (name, figure)
    assert document["loadgen"]["validity"] == "VALID", document["loadgen"]["reasons"]
    assert document["loadgen"]["figures"]["output_tokens_per_s"] > 0
    server = document["engine"]["server"]
    assert server["version"]["version"][0].isdigit()  # vLLM's /version
    assert server["models"][0]["id"] == vllm_server.model
    assert server["models"][0]["max_model_len"] == 1024
    # Each event's tokens counted from what vLLM says (token_ids), as usage has them.
    engine = OpenAIEngine(vllm_server.url, vllm_server.model, api=api)
    sink = _Calls()
    request = GenerationRequest((), OUTPUT_TOKENS, prompt_text="kalo mi nu re")
    result = engine.generate([request], [sink])[0]
    engine.close()
    assert (result.failure, result.output_tokens, sum(sink.calls)) == ("", 12, 12)


def _wait_for_successes(endpoint: VllmEndpoint, wanted: int, deadline_s: float = 120.0) -> None:
    """Until vLLM's Prometheus counter of finished requests reaches ``wanted``."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        metrics = httpx.get(f"{endpoint.url}/metrics", timeout=5).text
        done = sum(
            float(line.rsplit(" ", 1)[1])
            for line in metrics.splitlines()
            if line.startswith("vllm:request_success_total")
        )
        if done >= wanted:
            return
        time.sleep(0.2)
    raise AssertionError(f"vLLM finished fewer than {wanted} requests in {deadline_s:.0f} s")


def test_killing_the_server_mid_run_fails_requests_and_ends(tmp_path: Path) -> None:
    """A server of its own (the session's stays up): SIGKILLed a few seconds into a run."""
    if not venv_is_current():
        pytest.skip("no vLLM virtualenv: python3 -m tests.support.vllm_server --prepare")
    server = VllmServer(tiny_llm(tmp_path / "model", seed=58), tmp_path)
    server.start()
    found: dict[str, Any] = {}
    options = _options(
        server.endpoint, "completions", output_tokens="64", min_duration_s=8.0, timeout_s=10.0
    )
    run = threading.Thread(target=lambda: found.update(measure_generation(options)))
    try:
        run.start()
        # Past the warm-up (at most WARM_UP_PASSES requests), LoadGen's requests streaming.
        _wait_for_successes(server.endpoint, WARM_UP_PASSES + 4)
        server.kill()
        run.join(RUN_DEADLINE_S)
    finally:
        server.stop()
    assert not run.is_alive(), f"the run still hangs {RUN_DEADLINE_S:.0f} s after the kill"
    requests = found["requests"]
    assert requests["completed"] > 0 and requests["failed"] > 0, requests
    assert requests["issued"] == requests["completed"] + requests["failed"]
    reasons = list(requests["failures"])
    assert all(r.startswith(("connection: ", "the stream broke")) for r in reasons), reasons
    assert found["figures"]["ttft_p50"]["estimate"] > 0  # the completed ones still count
