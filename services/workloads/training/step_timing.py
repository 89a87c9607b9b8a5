"""Statistics over per-step times.

Definitions (stated here and in the report):
- images/s of a step = batch size / step seconds; the mean is over measured (post-warm-up) steps.
- standard error = sample standard deviation of per-step images/s / sqrt(steps).
- jitter = mean absolute difference between consecutive step times, relative to the mean step time.

``timed_loop`` is the measuring loop every framework shares: a step is timed from fetching
the batch until the framework says the optimizer step is done.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

Batch = TypeVar("Batch")


@dataclass(frozen=True)
class StepStatistics:
    steps: int
    mean_images_per_s: float
    standard_error_images_per_s: float
    jitter: float
    mean_step_s: float
    data_share: float


def summarise(
    step_seconds: list[float], data_seconds: list[float], batch_size: int
) -> StepStatistics:
    """Statistics of measured steps; ``data_seconds[i]`` is the loading part of step i."""
    if not step_seconds:
        raise ValueError("steps: at least one measured step is needed (steps > warmup)")
    if len(data_seconds) != len(step_seconds):
        raise ValueError("data_seconds: one entry per step is needed")
    rates = [batch_size / s for s in step_seconds]
    n = len(rates)
    mean_rate = sum(rates) / n
    variance = sum((r - mean_rate) ** 2 for r in rates) / (n - 1) if n > 1 else 0.0
    mean_step = sum(step_seconds) / n
    diffs = [abs(b - a) for a, b in itertools.pairwise(step_seconds)]
    jitter = (sum(diffs) / len(diffs)) / mean_step if diffs else 0.0
    return StepStatistics(
        steps=n,
        mean_images_per_s=mean_rate,
        standard_error_images_per_s=math.sqrt(variance / n),
        jitter=jitter,
        mean_step_s=mean_step,
        data_share=sum(data_seconds) / sum(step_seconds),
    )


def timed_loop(
    warmup: int,
    steps: int,
    fetch: Callable[[], Batch],
    train_step: Callable[[Batch], None],
) -> tuple[list[float], list[float]]:
    """(step seconds, data seconds) of ``steps`` measured steps run after ``warmup`` unmeasured
    ones. ``fetch`` gets a batch onto the device; ``train_step`` must return only once the
    optimizer step has finished (a GPU synchronised, a TensorFlow result read back)."""
    step_seconds: list[float] = []
    data_seconds: list[float] = []
    for step in range(warmup + steps):
        start = time.perf_counter()
        batch = fetch()
        loaded = time.perf_counter()
        train_step(batch)
        end = time.perf_counter()
        if step >= warmup:
            step_seconds.append(end - start)
            data_seconds.append(loaded - start)
    return step_seconds, data_seconds
