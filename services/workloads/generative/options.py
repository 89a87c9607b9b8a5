"""A generative run's settings, as the CLI and a submission give them, each bounded with an
error that names the field and what is accepted."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from services.workloads.generative.bounds import TokenBounds, token_bounds
from services.workloads.generative.lengths import INPUT_RANGE, OUTPUT_RANGE, parse_length
from services.workloads.generative.loadgen_run import RunPlan
from services.workloads.generative.prompts import MAX_PROMPTS
from services.workloads.generative.tiny_llama import NAME as TINY_LLAMA
from services.workloads.generative.transformers_engine import MAX_BATCH

ENGINES = ("transformers", "openai")
MAX_WORKERS = 256
MAX_DURATION_S = 3600.0


class GenerativeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    engine: Literal["transformers", "openai"] = "transformers"
    # tiny-llama (built here, random weights) or a local directory saved with save_pretrained;
    # with the openai engine, the tokenizer's (prompts of exact lengths are made with it).
    model: str = Field(default=TINY_LLAMA, min_length=1, max_length=1000)
    # openai: the server's base URL, its API, the model's name there (default: model), the
    # seconds a read may wait, and the variable holding the API key.
    url: str | None = Field(default=None, max_length=1000)
    api: Literal["completions", "chat"] = "completions"
    served_model: str | None = Field(default=None, max_length=1000)
    timeout_s: float = Field(default=60.0, gt=0, le=MAX_DURATION_S)
    api_key_env: str = Field(default="OPENAI_API_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
    scenario: Literal["single-stream", "server", "offline"] = "single-stream"
    prompts: int = Field(default=16, ge=1, le=MAX_PROMPTS)
    input_tokens: str = Field(default="32", max_length=40)
    output_tokens: str = Field(default="16", max_length=40)
    # A JSONL file of prompts (on the machine that measures); replaces the synthetic ones.
    prompts_file: str | None = Field(default=None, max_length=1000)
    # A ShareGPT-shaped conversations file: up to ``prompts`` first exchanges (sharegpt.py).
    conversations_file: str | None = Field(default=None, max_length=1000)
    seed: int = Field(default=0, ge=0, le=2**31 - 1)
    # Requests one engine call takes (static batching) and the SUT's worker threads.
    batch_size: int = Field(default=1, ge=1, le=MAX_BATCH)
    workers: int = Field(default=1, ge=1, le=MAX_WORKERS)
    min_duration_s: float = Field(default=2.0, gt=0, le=MAX_DURATION_S)
    max_duration_s: float | None = Field(default=None, gt=0, le=MAX_DURATION_S)
    # None: 64 in SingleStream (LoadGen's early stopping needs them), else 1.
    min_query_count: int | None = Field(default=None, ge=1, le=MAX_PROMPTS * 100)
    # Server: the Poisson arrival rate, requests/s (None: half of what warm-up managed).
    target_qps: float | None = Field(default=None, gt=0, le=100_000)
    # Server objectives: a preset named after an MLPerf LLM benchmark, each figure overridable.
    bounds: str | None = Field(default=None, max_length=40)
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    percentile: float | None = None
    device: str = Field(default="cpu", pattern=r"^(cpu|cuda(:\d{1,2})?)$")

    @model_validator(mode="after")
    def _consistent(self) -> GenerativeOptions:
        parse_length("input_tokens", self.input_tokens, INPUT_RANGE)
        parse_length("output_tokens", self.output_tokens, OUTPUT_RANGE)
        if self.prompts_file and self.conversations_file:
            raise ValueError("prompts_file: give it or conversations_file, not both")
        # The openai engine without a url measures the endpoint its agent serves
        # (BENCHSTACK_AGENT_ENDPOINT_URL, stack_run.py); run.load_engine refuses it elsewhere.
        if self.engine != "openai" and self.url is not None:
            raise ValueError("url: only the openai engine takes a server's url")
        if self.max_duration_s is not None and self.max_duration_s < self.min_duration_s:
            raise ValueError("max_duration_s: must be at least min_duration_s")
        given = [self.bounds, self.ttft_ms, self.tpot_ms, self.percentile]
        if self.scenario != "server" and any(v is not None for v in given):
            raise ValueError(
                f"bounds: TTFT/TPOT objectives judge a Server run; the scenario is {self.scenario}"
            )
        if self.scenario == "server":
            self.token_bounds()  # refused here, before anything loads
        return self

    def token_bounds(self) -> TokenBounds | None:
        if self.scenario != "server":
            return None
        return token_bounds(self.bounds, self.ttft_ms, self.tpot_ms, self.percentile)

    def plan(self) -> RunPlan:
        return RunPlan(
            scenario=self.scenario,
            min_duration_s=self.min_duration_s,
            max_duration_s=self.max_duration_s,
            min_query_count=self.min_query_count,
            target_qps=self.target_qps,
            bounds=self.token_bounds(),
        )
