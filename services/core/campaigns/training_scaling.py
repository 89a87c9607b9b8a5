"""Training scaling: data-parallel training, one gang of N ranks per world size, one world
size after another (``submitTrainingScaling`` across agents, ``benchstack scale-training``
as N local ranks).

A gang's ranks meet at a rendezvous (services/workloads/training/gang.py) and train one
model together with DistributedDataParallel; the next gang starts once every rank of the
last is stored, so gangs never compete for the machines. From rank 0's stored run:
throughput(N) = N x batch / rank 0's mean step time; speedup and efficiency
E(N) = throughput(N) / (N x throughput(first)) relative to the first (smallest) size; and
whether the ranks' trained weights agree (the all-reduce kept them in step).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from services.core.campaigns.group import Done, InvalidCampaign, Member
from services.core.stored_report import OutcomeReport, load_report

KIND: Final = "training-scaling"
MAX_WORLD_SIZE = 16
MAX_POINTS = 8


class Gang(Member):
    """One world size's gang as each of its ranks stores it, with the rank's place
    (``placed``): its rank, its index among the gang's ranks on its host and how many
    share that host. The group's sizes and request travel with it, to start the next."""

    kind: Literal["training-scaling"] = KIND
    world_sizes: list[int]
    request: dict[str, Any]
    gang: str
    world_size: int
    point: int

    def placed(self, rank: int, local_rank: int, host_ranks: int) -> Rank:
        """One rank of this gang."""
        place = {"rank": rank, "local_rank": local_rank, "host_ranks": host_ranks}
        return Rank.model_validate(self.stored() | place)


class Rank(Gang):
    """One rank's record: its gang's, and its place in it."""

    rank: int
    local_rank: int = 0  # gangs stored before issue 33 have none
    host_ranks: int


@dataclass(frozen=True)
class PointFigures:
    """One world size's figures, from its ranks' stored runs; None until all are stored."""

    world_size: int
    images_per_second: float | None = None
    standard_error: float | None = None
    # Relative to the smallest world size measured.
    speedup: float | None = None
    efficiency: float | None = None
    weights_agree: bool | None = None


def check_world_sizes(world_sizes: Sequence[int], *, field: str = "worldSizes") -> list[int]:
    """The sizes in increasing order; InvalidCampaign naming ``field`` when refused."""
    if not 1 <= len(world_sizes) <= MAX_POINTS or len(set(world_sizes)) != len(world_sizes):
        raise InvalidCampaign(
            field,
            f"{list(world_sizes)}; accepted: 1..{MAX_POINTS} distinct sizes, e.g. [1, 2]",
        )
    for size in world_sizes:
        if not 1 <= size <= MAX_WORLD_SIZE:
            raise InvalidCampaign(field, f"{size}; accepted: 1..{MAX_WORLD_SIZE} ranks per point")
    return sorted(world_sizes)


def gang_of(group_id: str, world_sizes: Sequence[int], request: dict[str, Any], point: int) -> Gang:
    """The gang of the ``point``-th world size. Its id is derived from the group's and the
    point: the same gang whenever it is asked for, so a launcher sees a gang it started."""
    gang = str(uuid.uuid5(uuid.UUID(group_id), str(point)))
    sizes = list(world_sizes)
    return Gang(
        id=group_id, world_sizes=sizes, request=request, gang=gang,
        world_size=sizes[point], point=point,
    )  # fmt: skip


def plan(world_sizes: Sequence[int], request: dict[str, Any], *, field: str = "worldSizes") -> Gang:
    """A new scaling's first gang (its smallest size); ``request``: what each member keeps
    to start the next gang from."""
    sizes = check_world_sizes(world_sizes, field=field)
    return gang_of(str(uuid.uuid4()), sizes, request, 0)


def document_of(report: Mapping[str, Any]) -> dict[str, Any]:
    """A stored training run's document (what the aggregator keeps of training.json)."""
    loaded = load_report(report)
    return loaded.document if isinstance(loaded, OutcomeReport) else {}


def images_per_second_of(statistics: Mapping[str, Any]) -> float | None:
    """A stored run's images/s: batch / mean step time. Runs stored before issue 33 hold
    the mean of per-step rates instead, under its own name, and are shown with it."""
    value = statistics.get("images_per_s", statistics.get("mean_images_per_s"))
    return None if value is None else float(value)


def point_figures(world_size: int, ranks: Sequence[Mapping[str, Any]]) -> PointFigures:
    """The figures of one gang from its ranks' stored reports, in rank order."""
    if len(ranks) != world_size:
        return PointFigures(world_size)
    documents = [document_of(report) for report in ranks]
    statistics = documents[0].get("statistics") or {}
    digests = [(d.get("data_parallel") or {}).get("weight_digest") for d in documents]
    return PointFigures(
        world_size=world_size,
        images_per_second=images_per_second_of(statistics),
        standard_error=statistics.get("standard_error_images_per_s"),
        weights_agree=len(set(digests)) == 1 and None not in digests,
    )


def with_scaling(points: Sequence[PointFigures]) -> list[PointFigures]:
    """Speedup and efficiency of each measured point against the first measured."""
    measured = [p for p in points if p.images_per_second]
    if not measured:
        return list(points)
    base = measured[0]
    assert base.images_per_second is not None
    scaled = []
    for point in points:
        if not point.images_per_second:
            scaled.append(point)
            continue
        speedup = point.images_per_second / base.images_per_second
        efficiency = speedup / (point.world_size / base.world_size)
        scaled.append(replace(point, speedup=speedup, efficiency=efficiency))
    return scaled


def summarise(gangs: Sequence[tuple[Gang, Sequence[Mapping[str, Any]]]]) -> list[PointFigures]:
    points = [point_figures(gang.world_size, ranks) for gang, ranks in gangs]
    return with_scaling(sorted(points, key=lambda p: p.world_size))


def next_step(
    first: Gang, finished: Sequence[Mapping[str, Any]]
) -> list[Gang] | Done[list[PointFigures]]:
    """After ``finished`` (every stored rank's report so far): the next gang once every rank
    of the last is stored (the first before any), nothing while a gang has some ranks
    stored and not all, and the points once every size is. A gang with none stored is
    one not started: the next starts only when the last is complete, so a launcher asks
    again only when that last rank is stored (or a retry asks twice: the launcher knows
    which points it started)."""
    by_point: dict[int, list[tuple[int, Mapping[str, Any]]]] = {}
    for report in finished:
        rank = Rank.read(load_report(report).group or {})
        by_point.setdefault(rank.point, []).append((rank.rank, report))
    gangs = []
    for point in range(len(first.world_sizes)):
        gang = gang_of(first.id, first.world_sizes, first.request, point)
        ranks = [report for _, report in sorted(by_point.get(point, []), key=lambda r: r[0])]
        if not ranks:
            return [gang]
        if len(ranks) < gang.world_size:
            return []
        gangs.append((gang, ranks))
    return Done(summarise(gangs))
