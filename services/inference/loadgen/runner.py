"""Run one LoadGen test over a backend and a QSL, and collect LoadGen's logs."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from services.inference.backends.base import Backend
from services.inference.loadgen.config import ScenarioConfig
from services.inference.loadgen.qsl import TensorQSL
from services.inference.loadgen.sut import BatchingSUT, SUTStats

LOG_FILES = ("mlperf_log_summary.txt", "mlperf_log_detail.txt", "mlperf_log_accuracy.json")


@dataclass(frozen=True)
class WarmUp:
    """Measured before the test, untimed by LoadGen; sizes LoadGen's expectations."""

    batch_latency_s: float
    single_latency_s: float

    def samples_per_s(self, batch_size: int) -> float:
        return batch_size / self.batch_latency_s


@dataclass
class LoadGenResult:
    log_dir: Path
    stats: SUTStats
    outputs: dict[int, np.ndarray]
    warm_up: WarmUp
    wall_s: float

    def read_log(self, name: str) -> str:
        path = self.log_dir / name
        return path.read_text() if path.exists() else ""


def _time_predict(backend: Backend, batch: np.ndarray, iterations: int) -> float:
    start = time.perf_counter()
    for _ in range(iterations):
        backend.predict(batch)
    return (time.perf_counter() - start) / iterations


def warm_up(backend: Backend, qsl: TensorQSL, batch_size: int, iterations: int = 3) -> WarmUp:
    indices = [i % qsl.total_count for i in range(batch_size)]
    qsl.load(sorted(set(range(min(qsl.total_count, batch_size)))))
    batch = qsl.gather(indices[: min(batch_size, qsl.total_count)])
    if len(batch) < batch_size:  # a dataset smaller than the batch: repeat samples
        batch = np.resize(batch, (batch_size, *batch.shape[1:]))
    backend.warm_up(batch, iterations=iterations)
    batch_latency = _time_predict(backend, batch, iterations)
    single = batch[:1]
    backend.warm_up(single, iterations=1)
    single_latency = _time_predict(backend, single, iterations)
    qsl.unload([])
    return WarmUp(batch_latency_s=batch_latency, single_latency_s=single_latency)


def run_loadgen(
    backend: Backend,
    qsl: TensorQSL,
    config: ScenarioConfig,
    *,
    batch_size: int,
    log_dir: Path,
    workers: int = 1,
) -> LoadGenResult:
    import mlperf_loadgen as lg

    log_dir.mkdir(parents=True, exist_ok=True)
    measured = warm_up(backend, qsl, batch_size)
    batches_per_query = -(-config.samples_per_query // batch_size)
    settings = config.to_test_settings(
        measured_latency_s=measured.single_latency_s,
        measured_samples_per_s=measured.samples_per_s(batch_size),
        measured_query_latency_s=batches_per_query * measured.batch_latency_s,
    )
    if config.performance_sample_count is None:
        # Every prepared sample stays in RAM; LoadGen picks among all of them.
        settings.performance_sample_count_override = qsl.performance_count
    sut = BatchingSUT(
        backend,
        qsl,
        batch_size=batch_size,
        scenario=config.scenario,
        workers=workers,
        keep_outputs=config.mode == "accuracy",
    )
    log_settings = lg.LogSettings()
    log_settings.log_output.outdir = str(log_dir)
    log_settings.log_output.copy_summary_to_stdout = False
    log_settings.enable_trace = False
    sut_handle = sut.construct()
    qsl_handle = qsl.construct()
    start = time.perf_counter()
    try:
        lg.StartTestWithLogSettings(sut_handle, qsl_handle, settings, log_settings)
    finally:
        wall = time.perf_counter() - start
        sut.destroy()
        qsl.destroy()
    return LoadGenResult(
        log_dir=log_dir, stats=sut.stats, outputs=sut.outputs, warm_up=measured, wall_s=wall
    )
