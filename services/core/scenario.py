"""Scenario settings: what a user asks for, validated (LoadGen's TestSettings are made from
them in services/inference/loadgen/settings.py, so core imports no LoadGen).

Profiles: ``quick`` (seconds, for development and tests) and ``official`` (MLPerf's
durations and query counts). Fields left unset take the profile's value; expected
latencies and throughputs left unset are measured during warm-up, so LoadGen issues a
sensible number of samples for this machine instead of its one-size default.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Scenario = Literal["offline", "single-stream", "multi-stream", "server"]
Mode = Literal["performance", "accuracy"]
Profile = Literal["quick", "official"]

# How far measured warm-up figures are stretched when they stand in for LoadGen's expectations.
MEASURED_THROUGHPUT_MARGIN = 1.5
MEASURED_LATENCY_MARGIN = 0.5

SCENARIOS: tuple[str, ...] = ("offline", "single-stream", "multi-stream", "server")

# LoadGen's names for the scenarios, as mlperf.conf spells them.
LOADGEN_SCENARIO_NAMES = {
    "offline": "Offline",
    "single-stream": "SingleStream",
    "multi-stream": "MultiStream",
    "server": "Server",
}
# The model name mlperf.conf rules are looked up under: the MLPerf benchmark a manifest
# stands for (e.g. "resnet50"), or any other name for the rules every model shares.
GENERIC_MLPERF_MODEL = "benchstack"


class ScenarioConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario: Scenario = "offline"
    mode: Mode = "performance"
    profile: Profile = "quick"
    min_duration_s: float | None = Field(default=None, gt=0)
    max_duration_s: float | None = Field(default=None, gt=0)
    min_query_count: int | None = Field(default=None, ge=1)
    max_query_count: int | None = Field(default=None, ge=1)
    # Server: the Poisson arrival rate. Offline: the throughput LoadGen plans for.
    target_qps: float | None = Field(default=None, gt=0)
    # Server latency bound, and the percentile it applies to (also SingleStream/MultiStream).
    target_latency_ms: float | None = Field(default=None, gt=0)
    latency_percentile: float | None = Field(default=None, gt=0, lt=100)
    samples_per_query: int = Field(default=8, ge=1)
    expected_latency_ms: float | None = Field(default=None, gt=0)
    # How many samples LoadGen may pick from (all held in RAM); None: the whole dataset.
    performance_sample_count: int | None = Field(default=None, ge=1)
    qsl_rng_seed: int | None = None
    sample_index_rng_seed: int | None = None
    schedule_rng_seed: int | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ScenarioConfig:
        if (
            self.min_duration_s is not None
            and self.max_duration_s is not None
            and self.max_duration_s < self.min_duration_s
        ):
            raise ValueError("max_duration_s must be at least min_duration_s")
        if (
            self.min_query_count is not None
            and self.max_query_count is not None
            and self.max_query_count < self.min_query_count
        ):
            raise ValueError("max_query_count must be at least min_query_count")
        return self

    @property
    def effective_min_duration_s(self) -> float:
        if self.min_duration_s is not None:
            return self.min_duration_s
        return 600.0 if self.profile == "official" else 5.0

    @property
    def quick_min_query_count(self) -> int:
        return 1 if self.scenario == "offline" else 32
