"""``--repeats N``: the same run N times, and the spread of each figure across them."""

from __future__ import annotations

import math
import statistics
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from services.core.figures import FIGURES, figures_of
from services.embedded.bench import BenchRequest
from shared.stored_report import LoadGenReport

RunFn = Callable[[BenchRequest], dict[str, Any]]


@dataclass(frozen=True)
class Spread:
    """min / median / max of one figure over repeats; cv = sample stdev / mean."""

    count: int
    min: float
    median: float
    max: float
    mean: float
    stdev: float
    cv: float  # NaN with fewer than two values

    @classmethod
    def from_values(cls, values: Sequence[float]) -> Spread:
        finite = [v for v in values if not math.isnan(v)]
        if not finite:
            nan = math.nan
            return cls(0, nan, nan, nan, nan, nan, nan)
        mean = statistics.fmean(finite)
        stdev = statistics.stdev(finite) if len(finite) > 1 else math.nan
        return cls(
            count=len(finite),
            min=min(finite),
            median=statistics.median(finite),
            max=max(finite),
            mean=mean,
            stdev=stdev,
            cv=stdev / mean if mean and not math.isnan(stdev) else math.nan,
        )

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def summarise(reports: Sequence[Mapping[str, Any] | LoadGenReport]) -> dict[str, Spread]:
    """The spread of every figure in FIGURES across the reports."""
    per_run = [figures_of(r) for r in reports]
    return {name: Spread.from_values([f[name] for f in per_run]) for name in FIGURES}


def run_repeats(request: BenchRequest, count: int, run: RunFn) -> list[dict[str, Any]]:
    """``count`` runs of one request, linked as one group; each is stored by ``run``."""
    if count < 1:
        raise ValueError(f"--repeats: {count} must be at least 1")
    if count == 1:
        return [run(request)]  # a single run is not a group of repeats
    group_id = str(uuid.uuid4())
    reports = []
    for index in range(count):
        group = {"kind": "repeats", "id": group_id, "index": index, "count": count}
        reports.append(run(replace(request, group=group, run_id=None)))
    return reports
