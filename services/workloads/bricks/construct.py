"""A model's latency constructed from its bricks' timings on one system.

Constructions (DLBricks, Li et al. 2020, and two corrections measured here):

- **sequential**: the sum of the bricks' median latencies, in the recipe's order. Eager
  execution on a CPU runs one operator at a time, so this is the prediction to compare
  with a measured single-stream latency.
- **critical path**: the longest chain through the bricks' read-after-write edges, the
  latency if independent branches ran side by side; a lower bound on the sequential one.
- **floor-corrected**: the sequential sum less the floor every brick pays (an empty
  brick's latency through the same path, measured by ``bricks run``; see results.py),
  plus one floor for the model's own call. Nothing fitted. Without it a model of many
  small layers is overestimated by about (bricks - 1) x floor.
- **cold weights**: the sequential sum plus the time to read every layer's weights from
  memory: each brick's weight bytes (counted when it was measured) times the system's
  memory read cost (ms per MB, measured by ``bricks run``; memory.py). A brick measured
  in bursts finds its weights in cache; a model reads each layer's from memory. Nothing
  fitted (benchmarks/dlbricks.py prints it beside the others, per model). It assumes
  the reads add to the compute: true at 224 px for the catalogue (10 of 11 within 10 %),
  an overestimate where compute hides them (resnet18, mobilenet_v2, resnet34 at 64 px:
  1.21 to 1.54 of the measured latency).
- **calibrated**: the sequential sum plus a cost per brick, k x bricks, for what a brick
  call pays and the model does not (or the reverse: k may be negative). k is fitted by
  least squares on the models given to ``bricks calibrate``, measured end to end on the
  same system, and a model it was fitted on is never scored with it. k is held to
  ``calibration_bound`` (no brick may be given a negative share).

A figure at or below zero is kept and reported (Construction.non_positive), and a summary
over models names each one it leaves out and why (``summarise``): nothing is dropped
quietly.

Nothing is measured here; a brick without a timing on the system is named, never guessed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from services.workloads.bricks.memory import BYTES_PER_MB
from services.workloads.bricks.results import SystemResults

# Each construction's field and the name a summary gives it.
FIGURES = {
    "sequential_ms": "sequential",
    "critical_path_ms": "critical path",
    "floor_corrected_ms": "floor-corrected",
    "cold_weights_ms": "cold weights",
    "calibrated_ms": "calibrated",
}


@dataclass(frozen=True)
class Construction:
    model: str
    system: str
    layers: int
    steps: int
    unique_bricks: int
    missing: tuple[str, ...]  # signatures without a timing on the system
    sequential_ms: float | None = None
    critical_path_ms: float | None = None
    floor_corrected_ms: float | None = None  # None: no floor measured on this system
    # None: no memory read measured on this system, or a brick's weights not counted.
    cold_weights_ms: float | None = None
    calibrated_ms: float | None = None  # None: no calibration, or fitted on this model
    # Why a figure is None, field -> reason: every absent figure says why.
    absent: tuple[tuple[str, str], ...] = ()
    # The per-brick cost the calibrated figure used, after calibration_bound.
    ms_per_brick: float | None = None

    def why_absent(self, figure: str) -> str | None:
        return dict(self.absent).get(figure)

    def non_positive(self) -> list[str]:
        """The figures that came out at or below zero: no latency can be, so each is
        reported, never averaged (a sign the construction does not fit this model)."""
        return [f for f in FIGURES if (value := getattr(self, f)) is not None and value <= 0]


def construct(recipe: dict[str, Any], results: SystemResults) -> Construction:
    steps = recipe["steps"]
    signatures = [step["signature"] for step in steps]
    base = Construction(
        recipe["model"],
        results.system,
        int(recipe["layers"]),
        len(steps),
        len(set(signatures)),
        tuple(sorted({s for s in signatures if s not in results.bricks})),
    )
    if base.missing:
        reason = f"{len(base.missing)} of {base.unique_bricks} brick(s) not measured"
        return replace(base, absent=tuple((f, reason) for f in FIGURES))
    latency = [float(results.bricks[s]["median_ms"]) for s in signatures]
    finish: list[float] = []
    for number, step in enumerate(steps):
        # Steps are in topological order: every step a step reads comes before it.
        ready = max((finish[r] for r in step["reads"]), default=0.0)
        finish.append(ready + latency[number])
    absent: dict[str, str] = {}
    floor_corrected = calibrated = ms_per_brick = None
    if results.floor is not None:
        floor = float(results.floor["median_ms"])
        floor_corrected = sum(latency) - (len(latency) - 1) * floor
    else:
        absent["floor_corrected_ms"] = "no floor measured on this system"
    cold_weights = _cold_weights(signatures, results, absent)
    cost = results.brick_cost
    if cost is None:
        absent["calibrated_ms"] = "no calibration on this system"
    elif base.model in cost["fitted_on"]:
        absent["calibrated_ms"] = "calibrated on this model"
    else:
        # Bounded again here: a brick measured after the fit may be faster than any the
        # fit saw.
        ms_per_brick = max(float(cost["ms_per_brick"]), calibration_bound(latency))
        calibrated = sum(latency) + ms_per_brick * len(latency)
    return replace(
        base,
        sequential_ms=sum(latency),
        critical_path_ms=max(finish, default=0.0),
        floor_corrected_ms=floor_corrected,
        cold_weights_ms=None if cold_weights is None else sum(latency) + cold_weights,
        calibrated_ms=calibrated,
        absent=tuple(absent.items()),
        ms_per_brick=ms_per_brick,
    )


def _cold_weights(
    signatures: list[str], results: SystemResults, absent: dict[str, str]
) -> float | None:
    """The ms a model spends reading its layers' weights from memory (each step's bricks'
    weight bytes, as often as the recipe holds it), or None with the reason in
    ``absent``."""
    memory = results.memory
    if memory is None:
        absent["cold_weights_ms"] = "no memory read measured on this system"
        return None
    sizes = [results.bricks[s].get("weight_bytes") for s in signatures]
    uncounted = len({s for s, size in zip(signatures, sizes, strict=True) if size is None})
    if uncounted:
        absent["cold_weights_ms"] = (
            f"weight bytes not counted for {uncounted} brick(s) (measured before they were)"
        )
        return None
    megabytes = sum(int(size) for size in sizes if size is not None) / BYTES_PER_MB
    return megabytes * float(memory["ms_per_mb"])


def calibration_bound(brick_ms: Iterable[float]) -> float:
    """The lowest per-brick cost a calibration may add: minus the fastest brick.

    A negative cost is what each brick call pays and the model does not (the harness's
    call, an input copied in, a graph entered), taken off every brick. Each brick's
    median holds that cost once, so it cannot be more than the fastest brick: beyond it,
    the fit would say that brick took negative time, and models of many small bricks
    (mobilenet_v3_small at H=2) came out at or below zero. Held to it, every brick keeps
    a share >= 0 and a model's construction stays >= 0 (0 only if all its bricks tie
    with the fastest)."""
    return -min(brick_ms, default=0.0)


@dataclass(frozen=True)
class BrickCost:
    ms_per_brick: float  # what constructions use: the fit, held to the bound
    fitted_ms: float  # the least-squares figure before the bound
    bound_ms: float

    @property
    def bounded(self) -> bool:
        return self.ms_per_brick != self.fitted_ms


def fit_brick_cost(
    constructions: Sequence[Construction], measured_ms: Sequence[float], brick_ms: Iterable[float]
) -> BrickCost:
    """Least squares through the origin: (measured - sequential) = k x bricks; k is then
    held to ``calibration_bound`` of ``brick_ms`` (every brick timing on the system)."""
    pairs = [
        (m - c.sequential_ms, c.steps)
        for c, m in zip(constructions, measured_ms, strict=True)
        if c.sequential_ms is not None
    ]
    if not pairs:
        raise ValueError("calibrate: no model has every brick measured on this system")
    fitted = sum(r * n for r, n in pairs) / sum(n * n for _, n in pairs)
    bound = calibration_bound(brick_ms)
    return BrickCost(max(fitted, bound), fitted, bound)


def geometric_mean(values: Iterable[float]) -> float:
    """The geometric mean of positive values; any other is refused, never dropped."""
    values = list(values)
    if not values or any(not v > 0 for v in values):
        raise ValueError(f"geometric mean: accepted: one or more values above 0; got {values}")
    return math.exp(sum(math.log(v) for v in values) / len(values))


@dataclass(frozen=True)
class Summary:
    """A geometric mean over the models that have a positive figure, and the others named
    with the reason they are not in it."""

    geomean: float | None  # None: no model has a figure
    included: tuple[str, ...]
    excluded: tuple[tuple[str, str], ...]  # (model, why)

    @property
    def models(self) -> int:
        return len(self.included) + len(self.excluded)

    def describe(self) -> str:
        """``1.02 over 7 of 13 models; left out: a (not positive: -0.88), b (...)``."""
        head = "-" if self.geomean is None else f"{self.geomean:.2f}"
        text = f"{head} over {len(self.included)} of {self.models} models"
        if self.excluded:
            text += "; left out: " + ", ".join(f"{m} ({why})" for m, why in self.excluded)
        return text


def summarise(values: dict[str, float | None], why_absent: dict[str, str]) -> Summary:
    """Per model a figure (a ratio or a latency) or None with ``why_absent[model]``; a
    figure at or below zero is left out and named with its value."""
    included = {m: v for m, v in values.items() if v is not None and v > 0}
    excluded = tuple(
        (m, why_absent.get(m, "no figure") if v is None else f"not positive: {v:.3g}")
        for m, v in values.items()
        if m not in included
    )
    geomean = geometric_mean(included.values()) if included else None
    return Summary(geomean, tuple(included), excluded)
