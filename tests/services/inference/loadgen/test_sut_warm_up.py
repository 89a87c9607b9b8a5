"""Each SUT worker thread runs the batch shapes it will serve before LoadGen's clock starts."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from services.core.catalogue import resolve_model
from services.inference.backend_interface import Backend, BackendOptions
from services.inference.backends.registry import create_backend
from services.inference.loadgen import sut as sut_module
from services.inference.loadgen.qsl import TensorQSL
from services.inference.loadgen.sut import MAX_WARMED_SIZES, BatchingSUT, warm_sizes

TINY = "tests/fixtures/tiny_cnn.yaml"


def _recording_backend(calls: list[tuple[str, int]]) -> Backend:
    backend = create_backend("null", BackendOptions(extra={"service_time_ms": 0.0}))
    backend.load(resolve_model(TINY))
    original = backend.predict

    def predict(batch: np.ndarray) -> Any:
        calls.append((threading.current_thread().name, len(batch)))
        return original(batch)

    backend.predict = predict  # type: ignore[method-assign]
    return backend


def test_server_warms_every_size_dynamic_batching_can_form() -> None:
    assert warm_sizes("server", 4) == [4, 1, 2, 3]  # the cap first, then small ones up
    assert warm_sizes("server", 1) == [1]
    assert warm_sizes("offline", 4) == [4]
    cap = MAX_WARMED_SIZES + 36
    assert warm_sizes("server", cap) == [cap, *range(1, MAX_WARMED_SIZES + 1)]


def test_warming_stops_at_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sut_module, "WARM_BUDGET_S", 0.0)
    calls: list[tuple[str, int]] = []
    qsl = TensorQSL.from_array(np.zeros((8, 1, 32, 32), dtype=np.float32))
    warm = np.zeros((4, 1, 32, 32), dtype=np.float32)
    sut = BatchingSUT(
        _recording_backend(calls), qsl, batch_size=4, scenario="server", warm_batch=warm
    )
    sut.construct()
    sut.destroy()
    assert [size for _, size in calls] == [4]  # the cap always; nothing past the budget


@pytest.mark.parametrize(("scenario", "sizes"), [("server", [4, 1, 2, 3]), ("offline", [4])])
def test_every_worker_thread_is_warm_when_construct_returns(
    scenario: str, sizes: list[int]
) -> None:
    calls: list[tuple[str, int]] = []
    qsl = TensorQSL.from_array(np.zeros((8, 1, 32, 32), dtype=np.float32))
    warm = np.zeros((4, 1, 32, 32), dtype=np.float32)
    sut = BatchingSUT(
        _recording_backend(calls), qsl, batch_size=4, scenario=scenario, workers=2, warm_batch=warm
    )
    sut.construct()
    try:
        done = list(calls)  # read before anything else runs: construct() waited for both
    finally:
        sut.destroy()
    for worker in ("sut-worker-0", "sut-worker-1"):
        assert [size for name, size in done if name == worker] == sizes
    assert all(name.startswith("sut-worker-") for name, _ in done)
