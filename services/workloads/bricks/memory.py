"""What a model pays for its weights and a brick does not: reading them from memory.

A brick is measured in bursts, the same module called again and again, so from its
second call on its weights are in cache. Inside a model each layer's weights are read
once per inference, and a model's weights (5 to 350 MB in the catalogue) are far larger
than any cache: each layer finds its weights in memory. Measured here (catalogue, H=1),
the sequential sum of the bricks came out 9-22 % under the whole model for models with
many weights per unit of compute (regnet, mobilenet, efficientnet, convnext), while a
per-brick cost fitted across models could not tell them from the models of many small
bricks it over-estimates (googlenet).

So a system's bricks keep two figures beside their latencies: each brick's weight bytes
(its parameters and buffers, as loaded), and the system's memory read cost (ms per MB,
one core streaming a buffer larger than its caches). The cold-weights construction adds
the two's product to the sequential sum (construct.py). Nothing is fitted.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np

# The buffer read: larger than the last-level cache of the CPUs measured (32 MB per CCX
# here; 96 MB on the largest V-cache parts), so each pass reads memory, not cache. Its
# memory is what the measurement costs, and it is freed before any brick runs.
READ_BUFFER_MB = 256
READ_PASSES = 5
BYTES_PER_MB = 1_000_000


def weight_bytes(module: Any) -> int | None:
    """The bytes of a torch module's parameters and buffers; None for any other callable
    (an ONNX brick's session: its initializers are not counted)."""
    parameters = getattr(module, "parameters", None)
    buffers = getattr(module, "buffers", None)
    if parameters is None or buffers is None:
        return None
    return sum(t.nbytes for t in (*parameters(), *buffers()))


def measure_memory_read(
    buffer_mb: int = READ_BUFFER_MB, passes: int = READ_PASSES
) -> dict[str, float | int]:
    """The system's cost of reading memory from one core: the median over ``passes``
    passes of summing a ``buffer_mb`` float32 buffer (numpy's sum: one thread, SIMD, the
    read is the bound), as ms per MB, with the passes' spread. The caller holds the host
    (HostSlot), as for any figure."""
    if not 16 <= buffer_mb <= 4096 or not 3 <= passes <= 50:
        raise ValueError(
            f"memory read: {buffer_mb} MB x {passes} passes; accepted: 16..4096 MB, 3..50 passes"
        )
    buffer = np.ones(buffer_mb * BYTES_PER_MB // 4, dtype=np.float32)  # every page touched
    buffer.sum()  # one pass untimed: the pages are mapped
    seconds = []
    for _ in range(passes):
        start = time.perf_counter()
        buffer.sum()
        seconds.append(time.perf_counter() - start)
    median_s = statistics.median(seconds)
    ms_per_mb = median_s * 1e3 / buffer_mb
    return {
        "ms_per_mb": ms_per_mb,
        "gb_per_s": buffer_mb / 1e3 / median_s,
        "spread": (max(seconds) - min(seconds)) / median_s,
        "buffer_mb": buffer_mb,
        "passes": passes,
    }
