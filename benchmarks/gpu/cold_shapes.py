"""First and later calls of a catalogue model on a GPU per batch size, in a fresh thread.

Shows why each SUT worker thread warms every Server batch size itself (services/inference/
loadgen/sut.py): a shape's first call picks and loads its kernels, and torch keeps cuDNN's
plans per thread. Usage: python benchmarks/gpu/cold_shapes.py [MODEL] [MAX_BATCH]
"""

from __future__ import annotations

import sys
import threading
import time

import numpy as np

from services.core.catalogue import resolve_model
from services.inference.backend_interface import Backend, BackendOptions
from services.inference.backends.registry import create_backend


def call_times_ms(backend: Backend, batch: np.ndarray, size: int, calls: int = 3) -> list[float]:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        backend.predict(batch[:size])
        times.append((time.perf_counter() - start) * 1e3)
    return times


def main(model: str = "resnet18", max_batch: int = 8) -> None:
    backend = create_backend("torch", BackendOptions(device="cuda"))
    manifest = resolve_model(model)
    backend.load(manifest)
    shape = tuple(manifest.inputs[0].shape)
    batch = np.random.default_rng(0).standard_normal((max_batch, *shape)).astype(np.float32)
    for size in (max_batch, 1):  # what the main thread's warm-up runs
        call_times_ms(backend, batch, size)

    def in_a_new_thread() -> None:
        for size in range(1, max_batch + 1):
            first, *then = call_times_ms(backend, batch, size)
            print(f"batch {size}: first {first:.2f} ms, then {', '.join(f'{t:.2f}' for t in then)}")

    print(f"{model} on {backend.describe().get('gpu', 'cuda')}, in a thread that ran nothing yet:")
    worker = threading.Thread(target=in_a_new_thread)
    worker.start()
    worker.join()


if __name__ == "__main__":
    main(
        sys.argv[1] if len(sys.argv) > 1 else "resnet18",
        int(sys.argv[2]) if len(sys.argv) > 2 else 8,
    )
