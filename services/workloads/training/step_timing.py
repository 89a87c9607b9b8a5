"""Statistics over per-step times, as tf_cnn_benchmarks computes them (its
``benchmark_cnn.get_perf_timing``), and the loop that times the steps.

Definitions (stated here and in every report's ``definitions``):
- images/s = batch size / mean step seconds over the measured (post-warm-up) steps: the
  total images over the total time. Not the mean of per-step rates, which a few slow steps
  drag upward whenever steps vary (Jensen: the mean of 1/t exceeds 1/mean t).
- its standard error, by the delta method: the standard error of the mean step time
  (sample standard deviation / sqrt(steps)) propagated through batch / t, so
  se(images/s) = batch x se(step) / mean step^2. Steps are treated as independent; a run
  whose steps drift (a neighbour, a throttled CPU) has a wider spread than this says, which
  is what repeats (``--repeats``) are for.
- jitter = 1.4826 x the median absolute deviation of per-step images/s from their median,
  in images/s: tf_cnn_benchmarks' ``speed_jitter`` (1.4826 x MAD estimates a normal
  distribution's standard deviation, robust to a few outlying steps).
- data share = time getting the batch / total step time.

``timed_loop`` is the measuring loop every framework shares: a step is timed from fetching
the batch until the framework says the optimizer step is done. Every ``display_every``
measured steps it hands a ``StepLog`` line (step, images/s so far with its standard error
and jitter, the step's loss), as tf_cnn_benchmarks prints every ``--display_every`` steps.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

Batch = TypeVar("Batch")

# The normal distribution's standard deviation per median absolute deviation.
MAD_TO_SD = 1.4826
DEFAULT_DISPLAY_EVERY = 10

DEFINITIONS = {
    "images_per_s": "batch size / mean measured step seconds (= total images / total seconds)",
    "standard_error_images_per_s": "delta method: batch size x se(step seconds) / mean step^2, "
    "se(step seconds) = sample std / sqrt(steps)",
    "jitter_images_per_s": "tf_cnn_benchmarks' jitter: 1.4826 x median |per-step images/s - "
    "their median|",
    "data_share": "time getting the batch / total step time",
    "step_seconds": "every measured step, fetch to finished optimizer step, in order",
}


@dataclass(frozen=True)
class StepStatistics:
    steps: int
    images_per_s: float
    standard_error_images_per_s: float
    jitter_images_per_s: float
    mean_step_s: float
    standard_error_step_s: float
    median_step_s: float
    total_images: int
    total_s: float
    data_share: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class StepLog:
    """One progress line: the figures over measured steps 1..``step``, and that step's loss."""

    step: int
    images_per_s: float
    standard_error_images_per_s: float
    jitter_images_per_s: float
    loss: float | None

    def line(self) -> str:
        loss = "" if self.loss is None else f"\tloss {self.loss:.3f}"
        return (
            f"{self.step}\timages/s: {self.images_per_s:.1f} +/- "
            f"{self.standard_error_images_per_s:.1f} (jitter = {self.jitter_images_per_s:.1f})"
            f"{loss}"
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarise(
    step_seconds: list[float], data_seconds: list[float], batch_size: int
) -> StepStatistics:
    """Statistics of measured steps; ``data_seconds[i]`` is the loading part of step i."""
    if not step_seconds:
        raise ValueError("steps: at least one measured step is needed (steps > warmup)")
    if len(data_seconds) != len(step_seconds):
        raise ValueError("data_seconds: one entry per step is needed")
    if min(step_seconds) <= 0:
        raise ValueError("step_seconds: every step must take a positive time")
    n = len(step_seconds)
    total = math.fsum(step_seconds)
    mean_step = total / n
    se_step = statistics.stdev(step_seconds) / math.sqrt(n) if n > 1 else 0.0
    rates = [batch_size / s for s in step_seconds]
    middle = statistics.median(rates)
    return StepStatistics(
        steps=n,
        images_per_s=batch_size / mean_step,
        standard_error_images_per_s=batch_size * se_step / mean_step**2,
        jitter_images_per_s=MAD_TO_SD * statistics.median(abs(r - middle) for r in rates),
        mean_step_s=mean_step,
        standard_error_step_s=se_step,
        median_step_s=statistics.median(step_seconds),
        total_images=batch_size * n,
        total_s=total,
        data_share=math.fsum(data_seconds) / total,
    )


def step_log(step_seconds: list[float], batch_size: int, loss: float | None) -> StepLog:
    """The progress line after ``len(step_seconds)`` measured steps."""
    figures = summarise(step_seconds, [0.0] * len(step_seconds), batch_size)
    return StepLog(
        step=len(step_seconds),
        images_per_s=figures.images_per_s,
        standard_error_images_per_s=figures.standard_error_images_per_s,
        jitter_images_per_s=figures.jitter_images_per_s,
        loss=loss,
    )


@dataclass(frozen=True)
class TimedSteps:
    """What a measured loop recorded: every step's seconds, its loading part, the lines."""

    step_seconds: list[float]
    data_seconds: list[float]
    log: list[StepLog]


def timed_loop(
    warmup: int,
    steps: int,
    fetch: Callable[[], Batch],
    train_step: Callable[[Batch], Any],
    *,
    batch_size: int = 1,
    display_every: int = 0,
    show: Callable[[StepLog], None] | None = None,
) -> TimedSteps:
    """``steps`` measured steps run after ``warmup`` unmeasured ones. ``fetch`` gets a batch
    onto the device; ``train_step`` must return only once the optimizer step has finished
    (a GPU synchronised, a TensorFlow result read back), and may return the step's loss
    (anything ``float`` reads). Every ``display_every`` measured steps (0: never) a
    ``StepLog`` is kept and handed to ``show``; the loss is read after the step's timer
    stopped, so reading it costs the measurement nothing."""
    step_seconds: list[float] = []
    data_seconds: list[float] = []
    log: list[StepLog] = []
    for step in range(warmup + steps):
        start = time.perf_counter()
        batch = fetch()
        loaded = time.perf_counter()
        loss = train_step(batch)
        end = time.perf_counter()
        if step < warmup:
            continue
        step_seconds.append(end - start)
        data_seconds.append(loaded - start)
        if display_every and len(step_seconds) % display_every == 0:
            line = step_log(step_seconds, batch_size, None if loss is None else float(loss))
            log.append(line)
            if show is not None:
                show(line)
    return TimedSteps(step_seconds, data_seconds, log)
