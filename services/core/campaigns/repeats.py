"""Repeats: one run N times as one group, and the spread of each figure across them
(``benchstack bench --repeats N`` and ``submitRepeats``)."""

from __future__ import annotations

import math
import statistics
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

from services.core.campaigns.group import Done, InvalidCampaign, Member, Start, all_at_once
from services.core.confidence import Confidence, run_confidence
from services.core.figures import FIGURES, figures_of
from services.core.stored_report import LoadGenReport, load_loadgen_report

KIND: Final = "repeats"
MAX_REPEATS = 20


class RepeatsMember(Member):
    kind: Literal["repeats"] = KIND
    index: int
    count: int


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


@dataclass(frozen=True)
class RepeatsSummary:
    """Over the performance runs stored so far: each figure's spread and 95 % intervals."""

    spread: dict[str, Spread]
    confidence: Confidence


def spread_of(reports: Sequence[Mapping[str, Any] | LoadGenReport]) -> dict[str, Spread]:
    """The spread of every figure in FIGURES across the reports."""
    per_run = [figures_of(r) for r in reports]
    return {name: Spread.from_values([f[name] for f in per_run]) for name in FIGURES}


def summarise(reports: Sequence[Mapping[str, Any]]) -> RepeatsSummary | None:
    """None before the first performance run is stored."""
    loaded = [load_loadgen_report(report) for report in reports]
    measured = [r for r in loaded if (r.mode or "performance") == "performance" and r.performance]
    if not measured:
        return None
    return RepeatsSummary(spread_of(measured), run_confidence(measured))


@dataclass(frozen=True)
class Asked:
    """What a request for repeats gives beside the run (its GraphQL input's fields)."""

    count: int  # how many times it runs: 2..MAX_REPEATS

    def plan(self, scenario: str, settings: Mapping[str, Any]) -> list[RepeatsMember]:
        return plan(self.count)


def plan(count: int, *, field: str = "count") -> list[RepeatsMember]:
    """The members of ``count`` repeats; ``field``: what the launcher calls the count."""
    if not 2 <= count <= MAX_REPEATS:
        raise InvalidCampaign(field, f"{count}; accepted: 2..{MAX_REPEATS}")
    group_id = str(uuid.uuid4())
    return [RepeatsMember(id=group_id, index=index, count=count) for index in range(count)]


def next_step(
    members: Sequence[RepeatsMember], finished: Sequence[dict[str, Any]]
) -> list[Start] | Done[RepeatsSummary | None]:
    """All repeats at once; their summary when every one is stored."""
    return all_at_once(members, finished, summarise)
