"""What a stored training document (``training.json``, kept under a run's report) shows
outside the run: the images/s interval, the step times cut down for a chart, the progress
lines, and the settings that tell two training runs apart. Pure Python on the stored
document; no framework is imported.

The 95 % interval of images/s is images/s +/- t(0.975, steps - 1) x its standard error
(the delta method's, step_timing.DEFINITIONS): Student's t rather than 1.96, since a
short run has few steps and its standard error is itself uncertain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

LEVEL = 0.95
# How many step times a client may ask for, and what it gets when it does not say.
MAX_STEP_POINTS = 20_000
DEFAULT_STEP_POINTS = 2_000
MAX_LOG_LINES = 2_000
DEFAULT_LOG_LINES = 200

# The settings a reader lines up between training runs, in the order shown, with a label.
TRAINING_SETTINGS: tuple[tuple[str, str], ...] = (
    ("model", "Model (trained)"),
    ("framework", "Training framework"),
    ("image_size", "Image size (px)"),
    ("batch_size", "Batch size"),
    ("steps", "Steps (measured)"),
    ("warmup", "Warm-up steps"),
    ("optimizer", "Optimizer"),
    ("precision", "Precision"),
    ("data", "Data source"),
    ("threads", "Threads"),
    ("device", "Device"),
    ("workers", "Workers (data-parallel)"),
)


@dataclass(frozen=True)
class ImagesInterval:
    low: float | None
    high: float | None
    # Why there is none; empty when there is one.
    reason: str
    method: str


def images_interval(statistics: dict[str, Any]) -> ImagesInterval:
    """The 95 % interval of a stored run's images/s (see the module's docstring)."""
    from scipy.stats import t

    method = "images/s +/- t(0.975, steps - 1) x its delta-method standard error"
    value = statistics.get("images_per_s")
    error = statistics.get("standard_error_images_per_s")
    steps = int(statistics.get("steps") or 0)
    if value is None or error is None:
        return ImagesInterval(None, None, "no standard error stored with this run", method)
    if steps < 2:
        return ImagesInterval(
            None, None, f"{steps} measured step: no spread to estimate (2 steps or more)", method
        )
    half = float(t.ppf(0.5 + LEVEL / 2, steps - 1)) * float(error)
    return ImagesInterval(float(value) - half, float(value) + half, "", method)


@dataclass(frozen=True)
class StepTimes:
    # Measured steps the run timed; the lists hold at most the limit asked for.
    total_count: int
    # 1-based measured step of each point (warm-up steps are not counted).
    steps: list[int]
    seconds: list[float]
    downsampled: bool
    method: str


def step_times(step_seconds: list[float], limit: int) -> StepTimes:
    """Every step up to ``limit``; above it, ``limit`` evenly spaced steps (first and last
    included), each at its own step number, so the line keeps the run's course in time."""
    total = len(step_seconds)
    if total <= limit:
        picked = list(range(total))
        method = f"all {total} measured steps"
    else:
        span = total - 1
        picked = sorted({round(i * span / (limit - 1)) for i in range(limit)}) if limit > 1 else [0]
        method = f"{len(picked)} of {total} measured steps, evenly spaced (first and last included)"
    return StepTimes(
        total_count=total,
        steps=[i + 1 for i in picked],
        seconds=[float(step_seconds[i]) for i in picked],
        downsampled=len(picked) < total,
        method=method,
    )


def workers_of(document: dict[str, Any]) -> int | None:
    """A data-parallel rank's world size (None: a run on its own)."""
    data_parallel = document.get("data_parallel") or {}
    size = data_parallel.get("world_size")
    return None if size is None else int(size)


def setting_pairs(document: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(key, label, value as text) of the settings a training run states, in
    ``TRAINING_SETTINGS`` order; a missing one is "—", never a guessed default."""
    settings = dict(document.get("settings") or {})
    workers = workers_of(document)
    settings["workers"] = workers if workers is not None else 1
    return [
        (key, label, "—" if settings.get(key) is None else str(settings[key]))
        for key, label in TRAINING_SETTINGS
    ]


def fan_out_figures(document: dict[str, Any]) -> dict[str, Any]:
    """A training run's fan-out row (services/api/fan_out.FanOutRow) from its stored
    document: its settings, its images/s interval (images/s +/- t x its standard error)
    and step figures."""
    statistics = document.get("statistics") or {}
    interval = images_interval(statistics)
    mean_step = statistics.get("mean_step_s")
    return {
        "training_settings": [f"{key}={value}" for key, _, value in setting_pairs(document)],
        "samples_per_second_low": interval.low,
        "samples_per_second_high": interval.high,
        "interval_reason": interval.reason,
        "jitter_images_per_second": statistics.get("jitter_images_per_s"),
        "mean_step_ms": None if mean_step is None else float(mean_step) * 1000.0,
    }
