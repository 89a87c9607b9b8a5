"""Where a series moved beyond its noise: change points in a figure's history.

The search is ``ruptures``' PELT with a least-squares cost (``ruptures.Pelt(model="l2")``):
it finds the segmentation that minimises the within-segment squared error plus a penalty
per change, exactly, in one pass, and needs no count of changes in advance. Chosen over
Apache Otava's e-divisive because a history holds tens of runs, not thousands, where
PELT is exact and fast; ruptures is a small, maintained library with numpy as its one
dependency, while Otava brings a service's configuration and its own storage.

The series is scaled by its median first, so the penalty speaks in relative terms: a
change costs at least what a step of ``NOISE_FLOOR`` (rerun's 5 %) held over
``PENALTY_RUNS`` runs would save, more on a noisy series (BIC's 2 s² ln n, s the noise from the
differences of neighbouring runs). A change PELT proposes is then kept only when the move
between the medians of the runs on either side lies outside the noise band, computed as
rerun's (``services/core/campaigns/rerun.py``): the larger of its floor and twice the
spread of the runs on both sides. Runs measured on a BUSY host are left out (they are
marked in the history, never judged); each change point names what changed at it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from services.analysis.history import HistoryPoint, Series
from services.core.campaigns.rerun import NOISE_FLOOR

# The fewest runs on either side of a change: one run alone is an outlier, not a level.
MIN_SEGMENT = 2
PENALTY_RUNS = 2


@dataclass(frozen=True)
class ChangePoint:
    run_id: str  # the first run at the new level
    index: int  # its place in the series' judged runs
    before: float  # median of the runs since the change before (or the start)
    after: float  # median of the runs up to the next change (or the end)
    change: float  # relative, (after - before) / before
    band: float  # relative half-width of the noise band the move lies outside
    better: bool  # the move goes the good way for this figure
    interval: tuple[float, float] | None  # the first run's own 95 % interval
    changes: list[str]  # settings and environment that changed at this run


def _spread(values: Sequence[float]) -> float:
    """Coefficient of variation; 0 for fewer than two values."""
    if len(values) < 2 or not statistics.fmean(values):
        return 0.0
    return statistics.stdev(values) / abs(statistics.fmean(values))


def noise_band(left: Sequence[float], right: Sequence[float]) -> float:
    """rerun's band for two groups of runs: its floor, or twice their combined spread."""
    return max(NOISE_FLOOR, 2 * math.hypot(_spread(left), _spread(right)))


def candidate_breaks(values: Sequence[float]) -> list[int]:
    """Indices where PELT starts a new segment (never 0, never len(values))."""
    if len(values) < 2 * MIN_SEGMENT:
        return []
    scale = statistics.median(values) or 1.0
    signal = np.asarray(values, dtype=np.float64).reshape(-1, 1) / scale
    # Noise from the differences of neighbours (robust to the steps being sought): a
    # noisier series needs a larger saving before a change is proposed (a BIC-like penalty).
    diffs = np.abs(np.diff(signal[:, 0]))
    sigma = float(np.median(diffs)) / (0.6745 * math.sqrt(2))
    penalty = max(PENALTY_RUNS * NOISE_FLOOR**2, 2 * sigma**2 * math.log(len(values)))
    algo = _ruptures().Pelt(model="l2", min_size=MIN_SEGMENT, jump=1).fit(signal)
    return [int(b) for b in algo.predict(pen=penalty)[:-1]]


def _ruptures() -> Any:
    """ruptures, imported when a series is searched: the CLI starts without it, and a
    missing install says which extra brings it."""
    try:
        import ruptures
    except ImportError as exc:
        raise LookupError("change points need ruptures: pip install 'benchstack[history]'") from exc
    return ruptures


def change_points(series: Series, larger_is_better: bool) -> list[ChangePoint]:
    """The series' moves beyond noise, oldest first, among its judged runs only."""
    judged = series.judged
    values = [p.value for p in judged]
    bounds = [0, *candidate_breaks(values), len(values)]
    found = []
    for start, at, end in zip(bounds, bounds[1:], bounds[2:], strict=False):
        left, right = values[start:at], values[at:end]
        before, after = statistics.median(left), statistics.median(right)
        if not before:
            continue
        change = (after - before) / before
        band = noise_band(left, right)
        if abs(change) <= band:
            continue
        point = judged[at]
        found.append(
            ChangePoint(
                run_id=point.run_id,
                index=at,
                before=before,
                after=after,
                change=change,
                band=band,
                better=(change > 0) == larger_is_better,
                interval=point.interval,
                changes=changes_since(series.points, judged[at - 1], point),
            )
        )
    return found


def changes_since(
    points: Sequence[HistoryPoint], last: HistoryPoint, at: HistoryPoint
) -> list[str]:
    """What changed after ``last`` up to ``at``: a BUSY run between them may hold the
    change (it is named on the run where it happened, judged or not)."""
    ids = [p.run_id for p in points]
    between = points[ids.index(last.run_id) + 1 : ids.index(at.run_id) + 1]
    return [line for p in between for line in p.changes]
