"""A sweep: one run per value of one setting, as one group; the result is a
throughput-versus-latency curve (``benchstack sweep`` and ``submitSweep``)."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

from services.core.campaigns.group import Done, InvalidCampaign, Member, Start, all_at_once
from services.core.figures import figures_of, verdicts
from services.core.stored_report import load_loadgen_report
from services.core.workload import MAX_BATCH_SIZE

KIND: Final = "sweep"
MAX_POINTS = 16


@dataclass(frozen=True)
class Swept:
    # The scenario the setting belongs to; None: any.
    scenario: str | None
    whole: bool  # values are whole numbers (stored as ints)


PARAMETERS: dict[str, Swept] = {
    "batch_size": Swept(None, whole=True),
    "target_qps": Swept("server", whole=False),
    "samples_per_query": Swept("multi-stream", whole=True),
}


class SweepMember(Member):
    kind: Literal["sweep"] = KIND
    parameter: str
    value: int | float  # int for a setting in whole numbers

    def start(self) -> Start:
        if self.parameter == "batch_size":
            return Start(self.stored(), batch_size=int(self.value))
        return Start(self.stored(), settings={self.parameter: self.value})


@dataclass(frozen=True)
class CurvePoint:
    value: int | float  # int for a setting in whole numbers
    run_id: str
    samples_per_second: float
    latency_p50_ms: float
    latency_p90_ms: float
    latency_p99_ms: float
    validity: str
    stability: str
    # Whether the model stayed loaded from an earlier point (the model cache), and else
    # its load before this run in seconds (None where the run did not record it).
    model_kept: bool = False
    model_load_s: float | None = None


@dataclass(frozen=True)
class Curve:
    id: str
    model: str
    scenario: str
    parameter: str
    points: list[CurvePoint]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def model_loads(self) -> int:
        return sum(not point.model_kept for point in self.points)


def check(
    parameter: str, values: Sequence[float], scenario: str, *, fields: tuple[str, str]
) -> list[float]:
    """The values, each once, positive, whole where the setting is; ``fields``: what the
    launcher calls the parameter and the values (the CLI names its option for both)."""
    parameter_field, values_field = fields
    if parameter not in PARAMETERS:
        raise InvalidCampaign(
            parameter_field, f"{parameter!r}; accepted: {', '.join(PARAMETERS)}", list(PARAMETERS)
        )
    swept = PARAMETERS[parameter]
    if swept.scenario is not None and scenario != swept.scenario:
        raise InvalidCampaign(
            parameter_field,
            f"{parameter} is a {swept.scenario} setting; the scenario is {scenario} "
            f"(set it to {swept.scenario})",
        )
    if not 1 <= len(values) <= MAX_POINTS:
        raise InvalidCampaign(
            values_field, f"{len(values)} given; accepted: 1..{MAX_POINTS} per sweep"
        )
    kind = "whole numbers" if swept.whole else "numbers"
    for index, value in enumerate(values):
        if not math.isfinite(value) or value <= 0 or (swept.whole and value != int(value)):
            raise InvalidCampaign(values_field, f"{value:g}; accepted: positive {kind}")
        if value in values[:index]:
            raise InvalidCampaign(values_field, f"{value:g} is listed twice")
        if parameter == "batch_size" and value > MAX_BATCH_SIZE:
            raise InvalidCampaign(
                values_field, f"batch size {value:g}; accepted: 1..{MAX_BATCH_SIZE}"
            )
    return [int(v) if swept.whole else float(v) for v in values]


@dataclass(frozen=True)
class Asked:
    """What a request for a sweep gives beside the run (its GraphQL input's fields)."""

    # batch_size (any scenario), target_qps (server) or samples_per_query (multi-stream).
    parameter: str
    values: list[float]

    def plan(self, scenario: str, settings: Mapping[str, Any]) -> list[SweepMember]:
        return plan(self.parameter, self.values, scenario)


def plan(
    parameter: str,
    values: Sequence[float],
    scenario: str,
    *,
    fields: tuple[str, str] = ("parameter", "values"),
) -> list[SweepMember]:
    """One member per value, in the order given (the order they run in)."""
    checked = check(parameter, values, scenario, fields=fields)
    group_id = str(uuid.uuid4())
    return [SweepMember(id=group_id, parameter=parameter, value=value) for value in checked]


def point_of(stored: Mapping[str, Any]) -> CurvePoint:
    """A stored run as a point of its sweep's curve (its value from its group record)."""
    report = load_loadgen_report(stored)
    figures = figures_of(report)
    validity, stability = verdicts(report)
    timings = report.timings
    load = timings.get("model_load_s")
    return CurvePoint(
        value=SweepMember.read(report.group or {}).value,
        run_id=report.run_id,
        samples_per_second=figures["samples_per_second"],
        latency_p50_ms=figures["latency_p50"],
        latency_p90_ms=figures["latency_p90"],
        latency_p99_ms=figures["latency_p99"],
        validity=validity,
        stability=stability,
        model_kept=timings.get("model_cache_hit") == 1.0,
        model_load_s=float(load) if load is not None else None,
    )


def summarise(reports: Sequence[dict[str, Any]]) -> Curve:
    """The curve of the runs stored so far, in value order."""
    first = SweepMember.read(reports[0]["group"])
    return Curve(
        id=first.id,
        model=str(reports[0]["model"]["name"]),
        scenario=str(reports[0]["scenario"]),
        parameter=first.parameter,
        points=sorted((point_of(r) for r in reports), key=lambda point: point.value),
    )


def next_step(
    members: Sequence[SweepMember], finished: Sequence[dict[str, Any]]
) -> list[Start] | Done[Curve]:
    """Every point at once (on one agent they run one after another on one loaded model);
    the curve when every point is stored."""
    return all_at_once(members, finished, summarise)


def curve_point(group: Mapping[str, Any], settings: Mapping[str, Any]) -> tuple[str, float] | None:
    """The parameter a sweep point varied and its value, for a report's curve (curves.py)."""
    if group.get("parameter") and group.get("value") is not None:
        return str(group["parameter"]), float(group["value"])
    return None
