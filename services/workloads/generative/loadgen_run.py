"""One LoadGen test with token latencies over a streaming SUT: the settings made from the
run's scenario, a warm-up that plans it, and LoadGen's logs and the SUT's records back."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from services.workloads.generative.bounds import TokenBounds
from services.workloads.generative.engine import Engine, GenerationRequest
from services.workloads.generative.sut import RequestRecord, StreamingSUT

if TYPE_CHECKING:
    import mlperf_loadgen

Scenario = Literal["single-stream", "server", "offline"]
SCENARIOS: tuple[Scenario, ...] = ("single-stream", "server", "offline")
LOG_FILES = ("mlperf_log_summary.txt", "mlperf_log_detail.txt")
# LoadGen pre-generates its queries from the expected latency or rate and ends a run
# INVALID when the SUT is faster than planned ("Decrease the expected latency so the
# loadgen pre-generates more queries"): a warm-up on a busy machine can read ten times
# slow, so its figure is skewed to plan more.
SINGLE_STREAM_MARGIN = 10.0
MAX_PLANNED_QUERIES = 1_000_000
# LoadGen's early stopping needs this many SingleStream queries (its summary says so).
SINGLE_STREAM_MIN_QUERIES = 64
# Offline is planned as one query of expected rate x min duration: an engine faster than
# warm-up said leaves it short and INVALID, a slower one only runs longer.
OFFLINE_MARGIN = 3.0
WARM_UP_S = 0.5
WARM_UP_PASSES = 10


@dataclass(frozen=True)
class RunPlan:
    """What LoadGen is told: the scenario and its limits, and a Server run's objectives."""

    scenario: Scenario
    min_duration_s: float
    max_duration_s: float | None = None
    # None: LoadGen's early-stopping minimum for SingleStream, else 1.
    min_query_count: int | None = None
    # Server: the Poisson arrival rate (requests/s); None: half of what warm-up managed.
    target_qps: float | None = None
    bounds: TokenBounds | None = None


@dataclass(frozen=True)
class WarmUp:
    """One untimed batch: its seconds and requests, which plan the test."""

    seconds: float
    requests: int

    @property
    def requests_per_s(self) -> float:
        return self.requests / max(self.seconds, 1e-9)


@dataclass
class LoadGenOutcome:
    logs: dict[str, str]
    records: list[RequestRecord]
    warm_up: WarmUp
    target_qps: float | None


class _Counter:
    def __init__(self) -> None:
        self.tokens = 0

    def token(self, count: int = 1) -> None:
        self.tokens += count


def warm_up(engine: Engine, prompts: Sequence[GenerationRequest]) -> WarmUp:
    """One batch (the engine's, from the first prompts) generated before LoadGen starts,
    again until ``WARM_UP_S`` have passed (at most ``WARM_UP_PASSES`` times); the fastest
    pass after the first (which pays for allocations and lazy set-up) plans the test."""
    batch = [prompts[i % len(prompts)] for i in range(max(1, engine.max_batch))]
    passes: list[float] = []
    started = time.perf_counter()
    while len(passes) < WARM_UP_PASSES and (
        len(passes) < 2 or time.perf_counter() - started < WARM_UP_S
    ):
        start = time.perf_counter()
        results = engine.generate(batch, [_Counter() for _ in batch])
        passes.append(time.perf_counter() - start)
        failed = [r.failure for r in results if r.failed]
        if failed:
            raise ValueError(f"engine: the warm-up request failed: {failed[0]}")
    return WarmUp(seconds=min(passes[1:]), requests=len(batch))


def loadgen_settings(plan: RunPlan, warm: WarmUp, prompt_count: int) -> mlperf_loadgen.TestSettings:
    import mlperf_loadgen as lg

    settings = lg.TestSettings()
    settings.scenario = {
        "single-stream": lg.TestScenario.SingleStream,
        "server": lg.TestScenario.Server,
        "offline": lg.TestScenario.Offline,
    }[plan.scenario]
    settings.mode = lg.TestMode.PerformanceOnly
    settings.use_token_latencies = True
    settings.min_duration_ms = int(plan.min_duration_s * 1000)
    if plan.max_duration_s is not None:
        settings.max_duration_ms = int(plan.max_duration_s * 1000)
    settings.min_query_count = plan.min_query_count or (
        SINGLE_STREAM_MIN_QUERIES if plan.scenario == "single-stream" else 1
    )
    settings.performance_sample_count_override = prompt_count
    # SingleStream stops at its min duration and min queries whatever it pre-generated, so
    # planning for a faster engine costs only the schedule's memory (capped).
    per_request_ns = warm.seconds / max(1, warm.requests) * 1e9
    floor_ns = plan.min_duration_s * 1e9 / MAX_PLANNED_QUERIES
    expected_ns = max(per_request_ns / SINGLE_STREAM_MARGIN, floor_ns, 1)
    settings.single_stream_expected_latency_ns = int(expected_ns)
    settings.offline_expected_qps = warm.requests_per_s * OFFLINE_MARGIN
    if plan.scenario == "server":
        settings.server_target_qps = plan.target_qps or warm.requests_per_s * 0.5
    if plan.bounds is not None:
        settings.ttft_latency = int(plan.bounds.ttft_ms * 1e6)
        settings.tpot_latency = int(plan.bounds.tpot_ms * 1e6)
        settings.server_target_latency_percentile = plan.bounds.percentile / 100.0
    return settings


def run_test(
    engine: Engine,
    prompts: Sequence[GenerationRequest],
    plan: RunPlan,
    log_dir: Path,
    *,
    workers: int = 1,
) -> LoadGenOutcome:
    """Warm up, then one LoadGen performance test; LoadGen's logs and the SUT's records."""
    import mlperf_loadgen as lg

    warm = warm_up(engine, prompts)
    settings = loadgen_settings(plan, warm, len(prompts))
    sut = StreamingSUT(engine, prompts, workers=workers)
    log_settings = lg.LogSettings()
    log_dir.mkdir(parents=True, exist_ok=True)
    log_settings.log_output.outdir = str(log_dir)
    log_settings.log_output.copy_summary_to_stdout = False
    log_settings.enable_trace = False
    sut.start()
    sut_handle = lg.ConstructSUT(sut.issue, sut.flush)
    qsl_handle = lg.ConstructQSL(len(prompts), len(prompts), _no_op, _no_op)
    try:
        lg.StartTestWithLogSettings(sut_handle, qsl_handle, settings, log_settings)
    finally:
        sut.stop()
        lg.DestroySUT(sut_handle)
        lg.DestroyQSL(qsl_handle)
    logs = {name: _read(log_dir / name) for name in LOG_FILES}
    target = settings.server_target_qps if plan.scenario == "server" else None
    return LoadGenOutcome(logs, sorted(sut.records, key=lambda r: r.issued_ns), warm, target)


def _no_op(_: list[int]) -> None:
    """The prompts are held in memory already: nothing to load or unload."""


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""
