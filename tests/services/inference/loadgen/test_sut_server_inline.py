"""Server runs a query on LoadGen's issue thread when nothing else is queued or running
(BatchingSUT._may_run_inline), and hands queries to the workers, which batch them, once
LoadGen is catching up. Counts, never times: the speed is benchmarks/server_latency.py's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from services.core.catalogue import resolve_model
from services.core.scenario import ScenarioConfig
from services.inference.backend_interface import BackendOptions
from services.inference.backends.registry import create_backend
from services.inference.loadgen.qsl import TensorQSL
from services.inference.loadgen.runner import run_loadgen
from services.inference.loadgen.sut import SUTStats

TINY = "tests/fixtures/tiny_cnn.yaml"


def _server_run(tmp_path: Path, *, service_time_ms: float, qps: float, batch_size: int) -> SUTStats:
    backend = create_backend("null", BackendOptions(extra={"service_time_ms": service_time_ms}))
    backend.load(resolve_model(TINY))
    tensors = np.zeros((16, 1, 32, 32), np.float32)
    config = ScenarioConfig(scenario="server", min_duration_s=0.6, target_qps=qps)
    result = run_loadgen(
        backend, TensorQSL.from_array(tensors), config, batch_size=batch_size, log_dir=tmp_path
    )
    return result.stats


def test_a_lightly_loaded_server_runs_most_queries_on_the_issue_thread(tmp_path: Path) -> None:
    # 1 ms a query at 100 QPS: 10 % busy, so most arrivals find the SUT idle.
    stats = _server_run(tmp_path, service_time_ms=1.0, qps=100, batch_size=8)
    assert stats.failed_samples == 0
    assert stats.samples >= 40
    assert stats.inline_batches >= 0.5 * stats.batches


def test_a_server_behind_schedule_batches_on_its_workers(tmp_path: Path) -> None:
    # 4 ms a batch whatever its size, at 1,000 QPS: one query at a time on the issue
    # thread could serve 250 QPS; batches of up to 8 on the worker serve 2,000.
    stats = _server_run(tmp_path, service_time_ms=4.0, qps=1000, batch_size=8)
    assert stats.failed_samples == 0
    assert stats.inline_batches <= 0.2 * stats.batches
    assert stats.samples / stats.batches >= 2
