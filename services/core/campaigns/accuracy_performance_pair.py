"""MLPerf's accuracy + performance pair: both passes of one request, on one system, as one
group (``benchstack bench --submission`` and ``submitAccuracyPerformancePair``)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from services.core.campaigns.group import Done, InvalidCampaign, Member, Start, all_at_once
from services.core.stored_report import load_loadgen_report

KIND: Final = "accuracy-performance-pair"
Role = Literal["accuracy", "performance"]
ROLES: tuple[Role, ...] = ("accuracy", "performance")  # accuracy first: fails fast on bad labels


class PairMember(Member):
    kind: Literal["accuracy-performance-pair"] = KIND
    # Which pass; each pass's scenario mode is its role.
    role: Role

    def start(self) -> Start:
        # Both passes on one system: a submission needs them from the same one.
        return Start(self.stored(), settings={"mode": self.role}, pinned=True)


@dataclass(frozen=True)
class PairVerdict:
    """What each pass gave, so far: the accuracy pass's top-1/top-5 and the performance
    pass's throughput beside its verdicts; None where that pass is not stored yet."""

    accuracy_run: str | None
    performance_run: str | None
    top1: float | None
    top5: float | None
    accuracy_samples: int | None
    samples_per_second: float | None
    validity: str | None
    stability: str | None


@dataclass(frozen=True)
class Asked:
    """A pair is asked for with the run alone: nothing beside it."""

    def plan(self, scenario: str, settings: Mapping[str, Any]) -> list[PairMember]:
        return plan(settings.get("mode"))


def plan(mode: str | None, *, field: str = "settings.mode") -> list[PairMember]:
    """Both passes; ``mode``: the one the request asked for (the pair sets each pass's)."""
    if mode is not None:
        raise InvalidCampaign(field, "the pair sets each pass's mode; leave it out")
    group_id = str(uuid.uuid4())
    return [PairMember(id=group_id, role=role) for role in ROLES]


def summarise(reports: Sequence[Mapping[str, Any]]) -> PairVerdict:
    loaded = [load_loadgen_report(report) for report in reports]
    by_role = {PairMember.read(report.group or {}).role: report for report in loaded}
    accuracy_run, performance_run = by_role.get("accuracy"), by_role.get("performance")
    accuracy = accuracy_run.accuracy if accuracy_run else None
    performance = performance_run.performance if performance_run else None
    return PairVerdict(
        accuracy_run=accuracy_run.run_id if accuracy_run else None,
        performance_run=performance_run.run_id if performance_run else None,
        top1=accuracy.top1 if accuracy else None,
        top5=accuracy.top5 if accuracy else None,
        accuracy_samples=accuracy.sample_count if accuracy else None,
        samples_per_second=performance.samples_per_second if performance else None,
        validity=performance.validity.result if performance else None,
        stability=performance_run.stability_verdict if performance_run else None,
    )


def next_step(
    members: Sequence[PairMember], finished: Sequence[dict[str, Any]]
) -> list[Start] | Done[PairVerdict]:
    """Both passes at once (pinned to one system by the launcher); the verdict when both
    are stored."""
    return all_at_once(members, finished, summarise)
