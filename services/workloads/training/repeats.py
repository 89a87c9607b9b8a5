"""Figures over repeated runs: each arm's median images/s, and the ratio of two arms (a data
source against another, N workers against the first count), each with a 95 % interval and
a verdict only where the runs support one.

An arm is one thing measured: a data source, or a worker count. Runs are interleaved
(session.py: A, B, A, B, ...), so repeat r of every arm ran at about the same time and saw
about the same machine; the resampling keeps that pairing.

- an arm's figure: the median of its runs' images/s (each run's own batch / mean step
  time), robust to one run a neighbour slowed;
- a ratio: median(B) / median(A), the ratio of medians; for scaling, speedup(N) =
  median(images/s at N) / median(images/s at the first count) and E(N) = speedup(N) /
  (N / first count);
- the interval: a seeded percentile bootstrap over the repeats (services/core/confidence's
  level, resample count, seed and minimum of runs), drawing whole repeats with
  replacement, the same draw for both arms of a ratio, and recomputing the statistic;
- the verdict against a reference (1: no difference, perfect scaling): "differ" when the
  interval excludes it, "cannot say" when it holds it, when there are fewer repeats than an
  interval needs, or when a run was measured on a BUSY host (its figure describes the
  neighbour as much as the model).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from services.core.confidence import LEVEL, MIN_UNITS, RESAMPLES, level_bounds, seeded_draws

RULE = (
    f"{LEVEL:.0%} percentile bootstrap over repeats ({RESAMPLES} seeded resamples of whole "
    f"repeats, paired across arms); given from {MIN_UNITS} repeats"
)
DIFFER = "differ"
CANNOT_SAY = "cannot say"


@dataclass(frozen=True)
class ArmFigure:
    """One arm's images/s over its runs: the median, with an interval where one is given."""

    arm: str
    runs: int
    images_per_s: float
    low: float | None
    high: float | None
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RatioFigure:
    """``figure`` ("ratio", "speedup" or "efficiency") of arm ``b`` over arm ``a``."""

    figure: str
    a: str
    b: str
    estimate: float
    low: float | None
    high: float | None
    reference: float
    verdict: str
    why: str

    @property
    def given(self) -> bool:
        return self.low is not None and self.high is not None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _resampled_medians(
    values: Sequence[float], draws: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    return np.asarray(np.median(np.asarray(values, dtype=np.float64)[draws], axis=1))


def too_few(repeats: int) -> str:
    return (
        f"{repeats} repeat{'s' if repeats != 1 else ''}; an interval needs {MIN_UNITS}: "
        f"--repeats {MIN_UNITS} or more"
    )


def arm_figure(arm: str, images_per_s: Sequence[float]) -> ArmFigure:
    """The median of an arm's runs, with its bootstrap interval from ``MIN_UNITS`` runs."""
    if not images_per_s:
        raise ValueError(f"{arm}: no run to summarise")
    middle = float(statistics.median(images_per_s))
    if len(images_per_s) < MIN_UNITS:
        return ArmFigure(arm, len(images_per_s), middle, None, None, too_few(len(images_per_s)))
    low, high = level_bounds(_resampled_medians(images_per_s, seeded_draws(len(images_per_s))))
    return ArmFigure(arm, len(images_per_s), middle, low, high)


def ratio_figure(
    figure: str,
    a: str,
    a_values: Sequence[float],
    b: str,
    b_values: Sequence[float],
    *,
    scale: float = 1.0,
    busy_runs: int = 0,
) -> RatioFigure:
    """scale x median(b) / median(a), repeats paired by index, with its interval and
    verdict against 1 (see the module docstring)."""
    if len(a_values) != len(b_values) or not a_values:
        raise ValueError(f"{figure}: {a} and {b} need the same number of runs, at least one")
    estimate = scale * float(statistics.median(b_values) / statistics.median(a_values))
    low = high = None
    if len(a_values) >= MIN_UNITS:
        draws = seeded_draws(len(a_values))
        medians_b = _resampled_medians(b_values, draws)
        resampled = scale * medians_b / _resampled_medians(a_values, draws)
        low, high = level_bounds(resampled)
    verdict, why = _verdict(low, high, len(a_values), busy_runs)
    return RatioFigure(figure, a, b, estimate, low, high, 1.0, verdict, why)


def _verdict(
    low: float | None, high: float | None, repeats: int, busy_runs: int
) -> tuple[str, str]:
    """The verdict and every reason it is what it is."""
    withheld = []
    if low is None or high is None:
        withheld.append(too_few(repeats))
    if busy_runs:
        plural = "s were" if busy_runs != 1 else " was"
        withheld.append(f"{busy_runs} run{plural} measured on a BUSY host")
    if withheld:
        return CANNOT_SAY, "; ".join(withheld)
    assert low is not None and high is not None
    if high < 1.0 or low > 1.0:
        return DIFFER, f"the {LEVEL:.0%} interval [{low:.3f}, {high:.3f}] excludes 1"
    return CANNOT_SAY, f"the {LEVEL:.0%} interval [{low:.3f}, {high:.3f}] holds 1"
