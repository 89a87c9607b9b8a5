"""Run one LoadGen test over a backend and a QSL, and collect LoadGen's logs."""

from __future__ import annotations

import dataclasses
import logging
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from services.core.loadgen_logs import parse_summary
from services.core.scenario import GENERIC_MLPERF_MODEL, ScenarioConfig
from services.inference.backend_interface import Backend, BackendError
from services.inference.loadgen.progress import Phase, ProgressCallback, ProgressPoller, RunProgress
from services.inference.loadgen.qsl import TensorQSL
from services.inference.loadgen.settings import to_loadgen_settings
from services.inference.loadgen.sut import BatchingSUT, SUTStats
from services.inference.loadgen.timer_slack import precise_sleeps

if TYPE_CHECKING:
    import mlperf_loadgen

CALIBRATION_SECONDS = 0.5
# LoadGen and the SUT cost 4-20 us a sample whatever predict() costs, so a probe sized
# from predict() alone for a near-free backend (null, a tiny model) would run far past
# its 0.5 s: 200,000 samples took 4.2 s on a slow 2-core host. 20,000 take 0.1-0.4 s.
CALIBRATION_MAX = 20_000

LOG_FILES = ("mlperf_log_summary.txt", "mlperf_log_detail.txt", "mlperf_log_accuracy.json")

# LoadGen issues this many times the planned Offline samples (its fixed margin).
OFFLINE_SLACK = 1.1

log = logging.getLogger(__name__)


def end_criteria(
    settings: mlperf_loadgen.TestSettings, *, total_samples: int, samples_per_query: int
) -> tuple[float | None, int | None]:
    """(min duration s, min samples) after which LoadGen ends this test, for progress."""
    import mlperf_loadgen as lg

    if settings.mode == lg.TestMode.AccuracyOnly:
        return None, total_samples
    min_duration_s = settings.min_duration_ms / 1000
    if settings.scenario == lg.TestScenario.Offline:
        # One query; LoadGen sizes it at 1.1 x expected QPS x min duration (its own slack,
        # test_settings_internal.cc) and the test ends when those samples are done.
        planned = int(OFFLINE_SLACK * settings.offline_expected_qps * min_duration_s)
        return None, max(1, planned, int(settings.min_query_count))
    per_query = samples_per_query if settings.scenario == lg.TestScenario.MultiStream else 1
    return min_duration_s, max(1, int(settings.min_query_count)) * per_query


@dataclass(frozen=True)
class WarmUp:
    """Measured before the test, untimed by LoadGen; sizes LoadGen's expectations."""

    batch_latency_s: float
    single_latency_s: float
    # Samples/s through LoadGen + SUT + backend from a short Offline probe, when one ran.
    calibrated_samples_per_s: float | None = None
    # The warm-up batch, which the SUT's worker threads run again in their own threads.
    batch: np.ndarray | None = dataclasses.field(default=None, repr=False, compare=False)

    def samples_per_s(self, batch_size: int) -> float:
        if self.calibrated_samples_per_s:
            return self.calibrated_samples_per_s
        return batch_size / self.batch_latency_s


@dataclass
class LoadGenResult:
    log_dir: Path
    stats: SUTStats
    outputs: dict[int, np.ndarray]
    warm_up: WarmUp

    def read_log(self, name: str) -> str:
        path = self.log_dir / name
        return path.read_text() if path.exists() else ""


def _time_predict(backend: Backend, batch: np.ndarray, iterations: int) -> float:
    start = time.perf_counter()
    for _ in range(iterations):
        backend.predict(batch)
    return (time.perf_counter() - start) / iterations


def warm_up(backend: Backend, qsl: TensorQSL, batch_size: int, iterations: int = 3) -> WarmUp:
    first = list(range(min(qsl.total_count, batch_size)))
    qsl.load(first)
    batch = qsl.gather(first)
    if len(batch) < batch_size:  # a dataset smaller than the batch: repeat samples
        batch = np.resize(batch, (batch_size, *batch.shape[1:]))
    try:
        backend.warm_up(batch, iterations=iterations)
        batch_latency = _time_predict(backend, batch, iterations)
        single = batch[:1]
        backend.warm_up(single, iterations=1)
        single_latency = _time_predict(backend, single, iterations)
    except BackendError:
        raise
    except Exception as exc:  # the model rejects its input: say so before LoadGen starts
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise BackendError(
            f"inputs[0].shape: the model rejects a batch of shape {batch.shape}: "
            f"{type(exc).__name__}: {message}"
        ) from exc
    qsl.unload([])
    return WarmUp(batch_latency_s=batch_latency, single_latency_s=single_latency, batch=batch)


def _start_test(
    backend: Backend,
    qsl: TensorQSL,
    settings: mlperf_loadgen.TestSettings,
    *,
    scenario: str,
    batch_size: int,
    workers: int,
    keep_outputs: bool,
    log_dir: Path,
    progress: ProgressCallback | None = None,
    phase: Phase = "measuring",
    samples_per_query: int = 1,
    warm_batch: np.ndarray | None = None,
) -> BatchingSUT:
    import mlperf_loadgen as lg

    sut = BatchingSUT(
        backend,
        qsl,
        batch_size=batch_size,
        scenario=scenario,
        workers=workers,
        keep_outputs=keep_outputs,
        warm_batch=warm_batch,
    )
    log_settings = lg.LogSettings()
    log_settings.log_output.outdir = str(log_dir)
    log_settings.log_output.copy_summary_to_stdout = False
    log_settings.enable_trace = False
    # Server times each query from when it was scheduled: LoadGen's and the SUT's threads
    # (created in here) must wake on time, not up to Linux's default 50 us late.
    with precise_sleeps():
        sut_handle = sut.construct()
        qsl_handle = qsl.construct()
        try:
            if progress is None:
                lg.StartTestWithLogSettings(sut_handle, qsl_handle, settings, log_settings)
            else:
                min_duration_s, min_samples = end_criteria(
                    settings, total_samples=qsl.total_count, samples_per_query=samples_per_query
                )
                with ProgressPoller(
                    progress, sut, phase, min_duration_s=min_duration_s, min_samples=min_samples
                ):
                    lg.StartTestWithLogSettings(sut_handle, qsl_handle, settings, log_settings)
        finally:
            sut.destroy()
            qsl.destroy()
    return sut


def calibrate_throughput(
    backend: Backend,
    qsl: TensorQSL,
    *,
    batch_size: int,
    workers: int,
    predict_samples_per_s: float,
    log_dir: Path,
    progress: ProgressCallback | None = None,
) -> float:
    """Samples/s of the whole path (LoadGen, SUT, backend) from a ~0.5 s Offline probe.

    Warm-up times predict() alone; for a fast model LoadGen's and the SUT's per-sample cost
    dominates (about 4 us a sample here), and an Offline run planned from predict() alone
    would issue fifty times too many samples and run for minutes instead of seconds.
    """
    import mlperf_loadgen as lg

    samples = int(
        min(max(predict_samples_per_s * CALIBRATION_SECONDS, batch_size * 2), CALIBRATION_MAX)
    )
    settings = lg.TestSettings()
    settings.scenario = lg.TestScenario.Offline
    settings.mode = lg.TestMode.PerformanceOnly
    # Offline issues expected_qps x min_duration samples in one query: exactly `samples`.
    settings.min_duration_ms = 1000
    settings.min_query_count = 1
    settings.offline_expected_qps = float(samples)
    settings.performance_sample_count_override = qsl.performance_count
    log_dir.mkdir(parents=True, exist_ok=True)
    _start_test(
        backend,
        qsl,
        settings,
        scenario="offline",
        batch_size=batch_size,
        workers=workers,
        keep_outputs=False,
        log_dir=log_dir,
        progress=progress,
        phase="calibrating",
    )
    summary = parse_summary((log_dir / "mlperf_log_summary.txt").read_text())
    return float(summary.get("Samples per second", predict_samples_per_s))


def run_loadgen(
    backend: Backend,
    qsl: TensorQSL,
    config: ScenarioConfig,
    *,
    batch_size: int,
    log_dir: Path,
    workers: int = 1,
    mlperf_model: str = GENERIC_MLPERF_MODEL,
    progress: ProgressCallback | None = None,
) -> LoadGenResult:
    """Warm up, calibrate where LoadGen needs a throughput, then run the test.

    ``progress``, when given, hears each phase from a separate thread (see loadgen/progress.py).
    """
    log_dir.mkdir(parents=True, exist_ok=True)
    if progress is not None:
        progress(RunProgress(phase="warming up", completed_samples=0, elapsed_s=0.0))
    measured = warm_up(backend, qsl, batch_size)
    backend.start_measurement()
    if (
        config.mode == "performance"
        and config.scenario in {"offline", "server"}
        and config.target_qps is None
    ):
        with tempfile.TemporaryDirectory(prefix="benchstack-calibration-") as probe_dir:
            calibrated = calibrate_throughput(
                backend,
                qsl,
                batch_size=batch_size,
                workers=workers,
                predict_samples_per_s=measured.samples_per_s(batch_size),
                log_dir=Path(probe_dir),
                progress=progress,
            )
        measured = dataclasses.replace(measured, calibrated_samples_per_s=calibrated)
    batches_per_query = -(-config.samples_per_query // batch_size)
    settings = to_loadgen_settings(
        config,
        measured_latency_s=measured.single_latency_s,
        measured_samples_per_s=measured.samples_per_s(batch_size),
        measured_query_latency_s=batches_per_query * measured.batch_latency_s,
        mlperf_model=mlperf_model,
    )
    if config.performance_sample_count is None:
        # Every prepared sample stays in RAM; LoadGen picks among all of them.
        settings.performance_sample_count_override = qsl.performance_count
    sut = _start_test(
        backend,
        qsl,
        settings,
        scenario=config.scenario,
        batch_size=batch_size,
        workers=workers,
        keep_outputs=config.mode == "accuracy",
        log_dir=log_dir,
        progress=progress,
        samples_per_query=config.samples_per_query,
        warm_batch=measured.batch,
    )
    return LoadGenResult(log_dir=log_dir, stats=sut.stats, outputs=sut.outputs, warm_up=measured)
