"""A ScenarioConfig turned into LoadGen's TestSettings.

It lives here, beside the runner, and not on the config in services/core/scenario.py,
so that core imports no LoadGen: the config is a plain validated model there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from services.core.scenario import (
    GENERIC_MLPERF_MODEL,
    LOADGEN_SCENARIO_NAMES,
    MEASURED_LATENCY_MARGIN,
    MEASURED_THROUGHPUT_MARGIN,
    ScenarioConfig,
)

if TYPE_CHECKING:
    import mlperf_loadgen


def to_loadgen_settings(
    config: ScenarioConfig,
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
    if config.profile == "official" and settings.FromConfig(
        "mlperf.conf", mlperf_model, LOADGEN_SCENARIO_NAMES[config.scenario], 0
    ):
        raise ValueError(f"profile: LoadGen could not read its mlperf.conf for {mlperf_model}")
    settings.scenario = {
        "offline": lg.TestScenario.Offline,
        "single-stream": lg.TestScenario.SingleStream,
        "multi-stream": lg.TestScenario.MultiStream,
        "server": lg.TestScenario.Server,
    }[config.scenario]
    settings.mode = (
        lg.TestMode.PerformanceOnly if config.mode == "performance" else lg.TestMode.AccuracyOnly
    )
    _apply_limits(config, settings)
    _apply_expectations(
        config, settings, measured_latency_s, measured_samples_per_s, measured_query_latency_s
    )
    if config.performance_sample_count is not None:
        settings.performance_sample_count_override = config.performance_sample_count
    for name in ("qsl_rng_seed", "sample_index_rng_seed", "schedule_rng_seed"):
        value = getattr(config, name)
        if value is not None:
            setattr(settings, name, value)
    return settings


def _apply_limits(config: ScenarioConfig, settings: mlperf_loadgen.TestSettings) -> None:
    """Durations and query counts: the user's, else the quick profile's."""
    if config.min_duration_s is not None or config.profile == "quick":
        settings.min_duration_ms = int(config.effective_min_duration_s * 1000)
    if config.max_duration_s is not None:
        settings.max_duration_ms = int(config.max_duration_s * 1000)
    if config.min_query_count is not None:
        settings.min_query_count = config.min_query_count
    elif config.profile == "quick":
        settings.min_query_count = config.quick_min_query_count
    if config.max_query_count is not None:
        settings.max_query_count = config.max_query_count


def _apply_expectations(
    config: ScenarioConfig,
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
        config.expected_latency_ms * 1e6
        if config.expected_latency_ms
        else measured_latency_s * 1e9 * MEASURED_LATENCY_MARGIN
    )
    percentile = (config.latency_percentile or 0.0) / 100.0
    if config.scenario == "offline":
        settings.offline_expected_qps = (
            config.target_qps or measured_samples_per_s * MEASURED_THROUGHPUT_MARGIN
        )
    elif config.scenario == "server":
        settings.server_target_qps = config.target_qps or measured_samples_per_s * 0.5
        if config.target_latency_ms is not None:
            settings.server_target_latency_ns = int(config.target_latency_ms * 1e6)
        if percentile:
            settings.server_target_latency_percentile = percentile
    elif config.scenario == "single-stream":
        settings.single_stream_expected_latency_ns = int(max(expected_latency_ns, 1))
        if percentile:
            settings.single_stream_target_latency_percentile = percentile
    else:
        settings.multi_stream_samples_per_query = config.samples_per_query
        query_ns = (
            config.expected_latency_ms * 1e6
            if config.expected_latency_ms
            else (measured_query_latency_s or measured_latency_s) * 1e9 * MEASURED_LATENCY_MARGIN
        )
        settings.multi_stream_expected_latency_ns = int(max(query_ns, 1))
        if percentile:
            settings.multi_stream_target_latency_percentile = percentile
