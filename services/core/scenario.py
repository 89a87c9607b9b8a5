"""Scenario settings: what a user asks for, validated, and turned into LoadGen's TestSettings.

Profiles: ``quick`` (seconds, for development and tests) and ``official`` (MLPerf's
durations and query counts). Fields left unset take the profile's value; expected
latencies and throughputs left unset are measured during warm-up, so LoadGen issues a
sensible number of samples for this machine instead of its one-size default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    import mlperf_loadgen

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

    def to_test_settings(
        self,
        *,
        measured_latency_s: float,
        measured_samples_per_s: float,
        measured_query_latency_s: float | None = None,
        mlperf_model: str = GENERIC_MLPERF_MODEL,
    ) -> mlperf_loadgen.TestSettings:
        """LoadGen settings; measured figures come from warm-up and fill unset expectations.

        The ``official`` profile starts from LoadGen's own bundled mlperf.conf for the
        scenario (and ``mlperf_model`` when it is an MLPerf benchmark): its durations, query
        counts, latency bounds and seeds. Fields the user gave still win.
        """
        import mlperf_loadgen as lg

        settings = lg.TestSettings()
        # conf_type 0: only the mlperf.conf LoadGen carries inside itself.
        if self.profile == "official" and settings.FromConfig(
            "mlperf.conf", mlperf_model, LOADGEN_SCENARIO_NAMES[self.scenario], 0
        ):
            raise ValueError(f"profile: LoadGen could not read its mlperf.conf for {mlperf_model}")
        settings.scenario = {
            "offline": lg.TestScenario.Offline,
            "single-stream": lg.TestScenario.SingleStream,
            "multi-stream": lg.TestScenario.MultiStream,
            "server": lg.TestScenario.Server,
        }[self.scenario]
        settings.mode = (
            lg.TestMode.PerformanceOnly if self.mode == "performance" else lg.TestMode.AccuracyOnly
        )
        self._apply_limits(settings)
        self._apply_expectations(
            settings, measured_latency_s, measured_samples_per_s, measured_query_latency_s
        )
        if self.performance_sample_count is not None:
            settings.performance_sample_count_override = self.performance_sample_count
        for name in ("qsl_rng_seed", "sample_index_rng_seed", "schedule_rng_seed"):
            value = getattr(self, name)
            if value is not None:
                setattr(settings, name, value)
        return settings

    def _apply_limits(self, settings: mlperf_loadgen.TestSettings) -> None:
        """Durations and query counts: the user's, else the quick profile's."""
        if self.min_duration_s is not None or self.profile == "quick":
            settings.min_duration_ms = int(self.effective_min_duration_s * 1000)
        if self.max_duration_s is not None:
            settings.max_duration_ms = int(self.max_duration_s * 1000)
        if self.min_query_count is not None:
            settings.min_query_count = self.min_query_count
        elif self.profile == "quick":
            settings.min_query_count = self.quick_min_query_count
        if self.max_query_count is not None:
            settings.max_query_count = self.max_query_count

    def _apply_expectations(
        self,
        settings: mlperf_loadgen.TestSettings,
        measured_latency_s: float,
        measured_samples_per_s: float,
        measured_query_latency_s: float | None,
    ) -> None:
        """What LoadGen plans the run from: the scenario's expected rate or latency (the
        user's, else warm-up's with a margin) and its latency bound and percentile."""
        # Warm-up under-reads a steady state (caches, allocator, clocks still settling). LoadGen
        # pre-plans a run from these expectations and ends it INVALID when the SUT is faster
        # than planned, so measured figures are skewed to plan a longer run, never a shorter.
        expected_latency_ns = (
            self.expected_latency_ms * 1e6
            if self.expected_latency_ms
            else measured_latency_s * 1e9 * MEASURED_LATENCY_MARGIN
        )
        percentile = (self.latency_percentile or 0.0) / 100.0
        if self.scenario == "offline":
            settings.offline_expected_qps = (
                self.target_qps or measured_samples_per_s * MEASURED_THROUGHPUT_MARGIN
            )
        elif self.scenario == "server":
            settings.server_target_qps = self.target_qps or measured_samples_per_s * 0.5
            if self.target_latency_ms is not None:
                settings.server_target_latency_ns = int(self.target_latency_ms * 1e6)
            if percentile:
                settings.server_target_latency_percentile = percentile
        elif self.scenario == "single-stream":
            settings.single_stream_expected_latency_ns = int(max(expected_latency_ns, 1))
            if percentile:
                settings.single_stream_target_latency_percentile = percentile
        else:
            settings.multi_stream_samples_per_query = self.samples_per_query
            query_ns = (
                self.expected_latency_ms * 1e6
                if self.expected_latency_ms
                else (measured_query_latency_s or measured_latency_s)
                * 1e9
                * MEASURED_LATENCY_MARGIN
            )
            settings.multi_stream_expected_latency_ns = int(max(query_ns, 1))
            if percentile:
                settings.multi_stream_target_latency_percentile = percentile
