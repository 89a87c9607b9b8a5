"""One run: a loaded backend, prepared tensors, a LoadGen scenario -> report and logs.

The embedded mode and the inference worker both call ``execute_run``; neither measures
anything itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from services.core.accuracy import score
from services.core.confidence import window_confidence
from services.core.hints import invalid_hints
from services.core.labels import top_k_of
from services.core.loadgen_logs import parse_detail
from services.core.manifest import ModelManifest
from services.core.metrics import AccuracyReport, LatencyStats, PerformanceReport, Stability
from services.core.recorded_events import recorded_events
from services.core.scenario import ScenarioConfig
from services.core.stability import assess_stability, not_applicable
from services.inference.backend_interface import Backend, BackendError
from services.inference.loadgen.progress import ProgressCallback
from services.inference.loadgen.qsl import FetchSamples, TensorQSL
from services.inference.loadgen.runner import LOG_FILES, run_loadgen
from services.inference.loadgen.sut import SUTStats
from shared.host_load import HostLoad, HostLoadSampler

RAW_LATENCIES_FILE = "sut_latencies_ns.npy"
# (finished_ns, samples) per completion event, and per-sample arrival times: the raw
# material of the stability verdict, kept so it can be recomputed from a stored run.
RAW_COMPLETIONS_FILE = "sut_completions_ns.npy"
RAW_ARRIVALS_FILE = "sut_arrivals_ns.npy"
SEED_KEYS = ("qsl_rng_seed", "sample_index_rng_seed", "schedule_rng_seed")


@dataclass
class RunOutcome:
    report: PerformanceReport
    accuracy: AccuracyReport | None
    backend_info: dict[str, Any]
    sut_latency: LatencyStats
    failed_samples: int
    errors: list[str]
    warm_up: dict[str, float | None]
    log_files: dict[str, Path] = field(default_factory=dict)
    stability: Stability | None = None
    # The RNG seeds LoadGen actually used (its detail log's effective_* values).
    seeds: dict[str, int] = field(default_factory=dict)
    # What a reader of the figures must know (e.g. labels that do not match the dataset).
    warnings: list[str] = field(default_factory=list)
    # Other processes' CPU use on this machine during the run.
    host_load: HostLoad | None = None
    # For an INVALID run: the likely causes, most likely first (evaluation.hints).
    hints: list[str] = field(default_factory=list)
    # 95 % intervals of the figures over the stability windows (core/confidence.py);
    # None for accuracy runs.
    confidence: dict[str, Any] | None = None


def check_framework_constraint(manifest: ModelManifest, backend: Backend) -> None:
    """A manifest's framework constraint binds the backend of that framework."""
    if backend.name != manifest.framework.name or not manifest.framework.version:
        return
    version = backend.version()
    if not manifest.framework.accepts(version):
        raise BackendError(
            f"framework.version: {manifest.ref} requires {manifest.framework.name}"
            f"{manifest.framework.version}, this machine has {manifest.framework.name} {version}"
        )


def execute_run(
    *,
    manifest: ModelManifest,
    backend: Backend,
    scenario: ScenarioConfig,
    batch_size: int,
    log_dir: Path,
    tensors: np.ndarray | None = None,
    fetch: FetchSamples | None = None,
    sample_count: int | None = None,
    labels: Sequence[int | None] | None = None,
    workers: int = 1,
    class_names: Sequence[str] = (),
    progress: ProgressCallback | None = None,
) -> RunOutcome:
    """Run LoadGen over prepared samples, given in RAM (``tensors``) or by a ``fetch``
    callback with ``sample_count`` (called only from the QSL's untimed load path).

    ``class_names`` (the dataset's sorted class folders) let accuracy compare label names
    with the manifest's labels file instead of assuming the folders sort in class order.
    ``progress`` hears each LoadGen phase from a thread of its own (the CLI's bars)."""
    _check_arguments(manifest, backend, scenario, batch_size, workers, labels)
    accuracy_mode = scenario.mode == "accuracy"
    # Read (and validate) the labels file before the run, not after minutes of inference.
    top_k = top_k_of(manifest) if accuracy_mode else None
    qsl = _sample_library(scenario, tensors, fetch, sample_count)
    # Other processes' CPU use during the run: a busy machine is named in the report.
    with HostLoadSampler() as load:
        result = run_loadgen(
            backend,
            qsl,
            scenario,
            batch_size=batch_size,
            log_dir=log_dir,
            workers=workers,
            # mlperf.conf rules specific to an MLPerf benchmark apply when the names match.
            mlperf_model=manifest.name,
            progress=progress,
        )
    stats = result.stats
    raw, completions, arrivals = _save_raw_timings(stats, log_dir)
    detail_text = result.read_log("mlperf_log_detail.txt")
    report = _performance_report(result.read_log("mlperf_log_summary.txt"), detail_text, stats)
    accuracy = None
    confidence = None
    if top_k is not None and labels is not None:
        accuracy = score(result.outputs, labels, top_k, class_names)
        stability = not_applicable("accuracy run: LoadGen issues each sample once, untimed")
    else:
        stability, confidence = _stability_and_confidence(
            scenario, workers, completions=completions, latencies_ns=raw, arrivals_ns=arrivals
        )
    backend_info = backend.describe()
    host_load = load.result
    # An accuracy pass has no timing rules, so LoadGen's INVALID there needs no hint.
    hints = (
        []
        if accuracy_mode
        else _hints(report, scenario, stats, host_load, backend_info, workers=workers)
    )
    return RunOutcome(
        report=report,
        accuracy=accuracy,
        backend_info=backend_info,
        sut_latency=LatencyStats.from_values(raw),
        failed_samples=result.stats.failed_samples,
        errors=result.stats.errors,
        warm_up={
            "batch_latency_s": result.warm_up.batch_latency_s,
            "single_latency_s": result.warm_up.single_latency_s,
            "calibrated_samples_per_s": result.warm_up.calibrated_samples_per_s,
        },
        log_files=_written_log_files(log_dir),
        stability=stability,
        seeds=_effective_seeds(detail_text),
        warnings=[f"the machine was {host_load.reason}"] if host_load.busy else [],
        host_load=host_load,
        hints=hints,
        confidence=confidence,
    )


def _performance_report(summary_text: str, detail_text: str, stats: SUTStats) -> PerformanceReport:
    """LoadGen's report of the run, invalidated when samples failed in the backend."""
    report = PerformanceReport.from_logs(summary_text, detail_text)
    if stats.failed_samples:
        # Failed samples complete at once, so LoadGen sees a fast SUT and may call the run
        # VALID; a figure measured over failures is no figure.
        report = report.invalidated(
            f"{stats.failed_samples} of {stats.samples} samples failed in the backend: "
            f"{stats.errors[0] if stats.errors else 'no message'}"
        )
    return report


def _hints(
    report: PerformanceReport,
    scenario: ScenarioConfig,
    stats: SUTStats,
    host_load: HostLoad,
    backend_info: dict[str, Any],
    *,
    workers: int,
) -> list[str]:
    """For an INVALID performance run: the likely causes, most likely first."""
    return invalid_hints(
        report=report,
        settings=scenario,
        failed_samples=stats.failed_samples,
        first_error=stats.errors[0] if stats.errors else None,
        host_load=host_load,
        threads=_int_or_none(backend_info.get("intra_op_threads")),
        workers=workers,
    )


def _effective_seeds(detail_text: str) -> dict[str, int]:
    """The RNG seeds LoadGen used, from its detail log's effective_* values."""
    detail = parse_detail(detail_text)
    return {
        key: int(detail[f"effective_{key}"]) for key in SEED_KEYS if f"effective_{key}" in detail
    }


def _written_log_files(log_dir: Path) -> dict[str, Path]:
    """LoadGen's logs and the raw timing files, those that were written, by name."""
    files = {
        name: log_dir / name
        for name in (*LOG_FILES, RAW_LATENCIES_FILE, RAW_COMPLETIONS_FILE, RAW_ARRIVALS_FILE)
    }
    return {k: v for k, v in files.items() if v.exists()}


def _check_arguments(
    manifest: ModelManifest,
    backend: Backend,
    scenario: ScenarioConfig,
    batch_size: int,
    workers: int,
    labels: Sequence[int | None] | None,
) -> None:
    """Refuse a run that could not give figures, before LoadGen starts."""
    if batch_size < 1:
        raise ValueError("batch_size: must be at least 1")
    if workers < 1:
        raise ValueError("workers: must be at least 1")
    check_framework_constraint(manifest, backend)
    if scenario.mode == "accuracy" and labels is None:
        raise ValueError("dataset: accuracy mode needs labels")


def _sample_library(
    scenario: ScenarioConfig,
    tensors: np.ndarray | None,
    fetch: FetchSamples | None,
    sample_count: int | None,
) -> TensorQSL:
    """The QSL over samples held in RAM, or over ``fetch`` for ``sample_count`` samples."""
    if tensors is not None:
        return TensorQSL.from_array(tensors, scenario.performance_sample_count)
    if fetch is not None and sample_count is not None:
        return TensorQSL(sample_count, scenario.performance_sample_count or sample_count, fetch)
    raise ValueError("execute_run needs tensors, or fetch and sample_count")


def _save_raw_timings(stats: SUTStats, log_dir: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Latencies, (finished_ns, samples) completions and arrivals, written as the raw
    files a stored run's verdicts can be recomputed from."""
    raw = np.asarray(stats.latencies_ns, dtype=np.int64)
    np.save(log_dir / RAW_LATENCIES_FILE, raw, allow_pickle=False)
    completions = np.asarray(stats.completions, dtype=np.int64).reshape(-1, 2)
    np.save(log_dir / RAW_COMPLETIONS_FILE, completions, allow_pickle=False)
    arrivals = np.asarray(stats.arrivals_ns, dtype=np.int64)
    np.save(log_dir / RAW_ARRIVALS_FILE, arrivals, allow_pickle=False)
    return raw, completions, arrivals


def _stability_and_confidence(
    scenario: ScenarioConfig,
    workers: int,
    *,
    completions: np.ndarray,
    latencies_ns: np.ndarray,
    arrivals_ns: np.ndarray,
) -> tuple[Stability, dict[str, Any]]:
    """A performance run's stability verdict and the 95 % intervals of its figures."""
    events = recorded_events(
        scenario=scenario.scenario,
        completions=[(int(f), int(n)) for f, n in completions],
        latencies_ns=latencies_ns,
        arrivals_ns=arrivals_ns,
        concurrency=workers if scenario.scenario in {"offline", "server"} else 1,
    )
    # After the measurement, never inside it: the bootstrap reads what the SUT recorded.
    return assess_stability(events), window_confidence(events).to_dict()


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) else None
