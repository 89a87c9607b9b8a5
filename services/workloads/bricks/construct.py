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
- **calibrated**: the sequential sum plus a cost per brick, k x bricks, for what a brick
  call pays and the model does not (or the reverse: k may be negative). k is fitted by
  least squares on the models given to ``bricks calibrate``, measured end to end on the
  same system, and a model it was fitted on is never scored with it.

Nothing is measured here; a brick without a timing on the system is named, never guessed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from services.workloads.bricks.results import SystemResults


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
    calibrated_ms: float | None = None  # None: no calibration, or fitted on this model


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
        return base
    latency = [float(results.bricks[s]["median_ms"]) for s in signatures]
    finish: list[float] = []
    for number, step in enumerate(steps):
        # Steps are in topological order: every step a step reads comes before it.
        ready = max((finish[r] for r in step["reads"]), default=0.0)
        finish.append(ready + latency[number])
    floor_corrected = calibrated = None
    if results.floor is not None:
        floor = float(results.floor["median_ms"])
        floor_corrected = sum(latency) - (len(latency) - 1) * floor
    cost = results.brick_cost
    if cost is not None and base.model not in cost["fitted_on"]:
        calibrated = sum(latency) + float(cost["ms_per_brick"]) * len(latency)
    return Construction(
        **{
            **base.__dict__,
            "sequential_ms": sum(latency),
            "critical_path_ms": max(finish, default=0.0),
            "floor_corrected_ms": floor_corrected,
            "calibrated_ms": calibrated,
        }
    )


def fit_brick_cost(constructions: Sequence[Construction], measured_ms: Sequence[float]) -> float:
    """Least squares through the origin: (measured - sequential) = k x bricks."""
    pairs = [
        (m - c.sequential_ms, c.steps)
        for c, m in zip(constructions, measured_ms, strict=True)
        if c.sequential_ms is not None
    ]
    if not pairs:
        raise ValueError("calibrate: no model has every brick measured on this system")
    return sum(r * n for r, n in pairs) / sum(n * n for _, n in pairs)


def geometric_mean(ratios: Iterable[float]) -> float | None:
    values = [r for r in ratios if r > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))
