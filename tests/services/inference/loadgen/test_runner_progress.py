"""Progress of a LoadGen run: each phase reported while it runs, through real LoadGen."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from services.core.catalogue import resolve_model
from services.core.scenario import ScenarioConfig
from services.inference.backend_interface import Backend, BackendOptions
from services.inference.backends.registry import create_backend
from services.inference.loadgen.progress import RunProgress
from services.inference.loadgen.runner import CALIBRATION_MAX, OFFLINE_SLACK
from services.inference.run import RunOutcome, execute_run

TINY = "tests/fixtures/tiny_cnn.yaml"


def _null(service_time_ms: float) -> Backend:
    backend = create_backend("null", BackendOptions(extra={"service_time_ms": service_time_ms}))
    backend.load(resolve_model(TINY))
    return backend


def _tensors(n: int = 32) -> np.ndarray:
    return np.random.default_rng(0).standard_normal((n, 1, 32, 32)).astype(np.float32)


class Recorder:
    def __init__(self) -> None:
        self.seen: list[RunProgress] = []
        self.threads: set[str] = set()

    def __call__(self, progress: RunProgress) -> None:
        self.seen.append(progress)
        self.threads.add(threading.current_thread().name)

    def phases(self) -> list[str]:
        """Phases in the order first reported."""
        return list(dict.fromkeys(p.phase for p in self.seen))

    def of(self, phase: str) -> list[RunProgress]:
        return [p for p in self.seen if p.phase == phase]


def _offline(
    log_dir: Path,
    recorder: Recorder,
    *,
    service_time_ms: float,
    min_duration_s: float,
    batch_size: int,
) -> RunOutcome:
    """An Offline run of the null backend on the tiny CNN, its progress to ``recorder``."""
    return execute_run(
        manifest=resolve_model(TINY),
        backend=_null(service_time_ms=service_time_ms),
        scenario=ScenarioConfig(scenario="offline", min_duration_s=min_duration_s),
        batch_size=batch_size,
        log_dir=log_dir,
        tensors=_tensors(),
        progress=recorder,
    )


def test_offline_reports_calibrating_then_measuring_up_to_loadgens_count(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    outcome = _offline(tmp_path, recorder, service_time_ms=2.0, min_duration_s=1.0, batch_size=4)
    assert recorder.phases() == ["warming up", "calibrating", "measuring"]
    measuring = recorder.of("measuring")
    # Reported while LoadGen ran (every 0.25 s over about a second), not only at the end.
    assert len(measuring) >= 3
    counts = [p.completed_samples for p in measuring]
    assert counts == sorted(counts) and counts[0] < counts[-1]
    # Offline ends when its one query's samples are done: the bar's end is LoadGen's count.
    assert measuring[-1].min_samples == outcome.report.sample_count
    assert measuring[-1].completed_samples == outcome.report.sample_count
    assert measuring[-1].fraction == 1.0
    # The measurement's thread never calls the display; a poller of its own does.
    assert "loadgen-progress" in recorder.threads


def test_a_near_free_backends_calibration_probe_is_capped(tmp_path: Path) -> None:
    # predict() of the null backend at 0 ms promises millions of samples/s; LoadGen's own
    # cost a sample does not, and an uncapped probe ran 220,000 samples for 4.2 s.
    recorder = Recorder()
    _offline(tmp_path, recorder, service_time_ms=0.0, min_duration_s=0.2, batch_size=1)
    planned = {p.min_samples for p in recorder.of("calibrating")}
    assert planned == {int(OFFLINE_SLACK * CALIBRATION_MAX)}, planned
    # At LoadGen's and the SUT's 4-20 us a sample, the probe stays within its 0.5 s.
    assert max(planned) * 20e-6 <= 0.5, planned


def test_multistream_end_is_min_queries_times_samples_per_query(tmp_path: Path) -> None:
    recorder = Recorder()
    config = ScenarioConfig(
        scenario="multi-stream", min_duration_s=0.2, min_query_count=40, samples_per_query=4
    )
    outcome = execute_run(
        manifest=resolve_model(TINY),
        backend=_null(service_time_ms=5.0),
        scenario=config,
        batch_size=4,
        log_dir=tmp_path,
        tensors=_tensors(),
        progress=recorder,
    )
    assert recorder.phases() == ["warming up", "measuring"]
    measuring = recorder.of("measuring")
    assert {(p.min_duration_s, p.min_samples) for p in measuring} == {(0.2, 160)}
    # 40 queries of ~5 ms take ~0.2 s or more: the count, not the time, bounds the run
    # mid-way, and the bar says so (fraction follows the slower criterion).
    middle = [p for p in measuring if 0 < p.completed_samples < 160]
    assert all(
        p.fraction == pytest.approx(min(1, p.elapsed_s / 0.2, p.completed_samples / 160))
        for p in middle
    )
    assert measuring[-1].fraction == 1.0
    assert measuring[-1].completed_samples == outcome.report.sample_count >= 160


def test_a_failing_display_does_not_end_the_measurement(tmp_path: Path) -> None:
    calls: list[RunProgress] = []

    def broken(progress: RunProgress) -> None:
        calls.append(progress)
        if progress.phase == "measuring":
            raise RuntimeError("terminal went away")

    outcome = execute_run(
        manifest=resolve_model(TINY),
        backend=_null(service_time_ms=1.0),
        scenario=ScenarioConfig(scenario="single-stream", min_duration_s=0.5),
        batch_size=1,
        log_dir=tmp_path,
        tensors=_tensors(),
        progress=broken,
    )
    assert [p.phase for p in calls] == ["warming up", "measuring"]  # then no more calls
    assert outcome.failed_samples == 0 and outcome.report.sample_count > 0
