"""A sweep of generative runs: one run per value of one setting (the Server rate, the SUT's
workers, or the engine's batch), as one group; the result is a curve of output tokens/s
against TTFT and TPOT, each figure with its interval, and LoadGen's verdict per point.

The values are checked as every sweep's are (services/core/campaigns/sweep.py): positive,
each once, whole where the setting is, at most MAX_POINTS. ``plan`` and ``curve_of`` are
pure; ``sweep`` runs the points here, in the order given."""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from services.core.campaigns.group import InvalidCampaign
from services.core.campaigns.sweep import MAX_POINTS
from services.workloads.generative.options import MAX_WORKERS, GenerativeOptions
from services.workloads.generative.transformers_engine import MAX_BATCH

KIND = "generative-sweep"
# Setting -> (the scenario it belongs to, None: any; the largest value accepted).
PARAMETERS: dict[str, tuple[str | None, float]] = {
    "target_qps": ("server", 100_000.0),
    "workers": (None, MAX_WORKERS),
    "batch_size": (None, MAX_BATCH),
}
# The figures of a point, in the order a table shows them (run.py's document names).
POINT_FIGURES = (
    "output_tokens_per_s",
    "requests_per_s",
    "ttft_p50",
    "ttft_p99",
    "tpot_p50",
    "tpot_p99",
    "goodput",
)


@dataclass(frozen=True)
class GenerativePoint:
    value: int | float
    run_id: str
    # Figure -> {"estimate", "low", "high", "reason", "unit"}: ours, with its interval.
    figures: dict[str, dict[str, Any]]
    validity: str
    validity_reasons: list[str]
    stability: str
    failed_requests: int


@dataclass(frozen=True)
class GenerativeCurve:
    id: str
    model: str
    scenario: str
    parameter: str
    points: list[GenerativePoint]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan(
    base: GenerativeOptions,
    parameter: str,
    values: Sequence[float],
    *,
    fields: tuple[str, str] = ("parameter", "values"),
) -> list[GenerativeOptions]:
    """Each point's options, in the order given; refused with the field named (``fields``:
    what the launcher calls the parameter and the values)."""
    parameter_field, values_field = fields
    if parameter not in PARAMETERS:
        raise InvalidCampaign(
            parameter_field, f"{parameter!r}; accepted: {', '.join(PARAMETERS)}", list(PARAMETERS)
        )
    scenario, largest = PARAMETERS[parameter]
    if scenario is not None and base.scenario != scenario:
        raise InvalidCampaign(
            parameter_field,
            f"{parameter} is a {scenario} setting; the scenario is {base.scenario}",
        )
    if not 1 <= len(values) <= MAX_POINTS:
        raise InvalidCampaign(values_field, f"{len(values)} given; accepted: 1..{MAX_POINTS}")
    whole = scenario is None
    points = []
    for index, value in enumerate(values):
        if not math.isfinite(value) or not 0 < value <= largest or (whole and value % 1):
            kind = "whole numbers" if whole else "numbers"
            raise InvalidCampaign(values_field, f"{value:g}; accepted: {kind} in (0, {largest:g}]")
        if value in values[:index]:
            raise InvalidCampaign(values_field, f"{value:g} is listed twice")
        update = {parameter: int(value) if whole else float(value)}
        points.append(GenerativeOptions(**(base.model_dump() | update)))
    return points


def point_of(document: Mapping[str, Any], parameter: str) -> GenerativePoint:
    """One run's document as a point of the curve (its value from its options)."""
    value = document["options"][parameter]
    figures = document["figures"]
    return GenerativePoint(
        value=value,
        run_id=str(document.get("run_id", "")),
        figures={name: dict(figures[name]) for name in POINT_FIGURES if name in figures},
        validity=str(document["loadgen"]["validity"]),
        validity_reasons=list(document["loadgen"]["reasons"]),
        stability=str(document["stability"]["verdict"]),
        failed_requests=int(document["requests"]["failed"]),
    )


def curve_of(
    documents: Sequence[Mapping[str, Any]], parameter: str, group_id: str = ""
) -> GenerativeCurve:
    """The curve of the runs so far, in value order."""
    first = documents[0]
    return GenerativeCurve(
        id=group_id,
        model=str(first["engine"]["model"]),
        scenario=str(first["options"]["scenario"]),
        parameter=parameter,
        points=sorted((point_of(d, parameter) for d in documents), key=lambda p: p.value),
    )


def sweep(
    base: GenerativeOptions,
    parameter: str,
    values: Sequence[float],
    measure: Callable[[GenerativeOptions], dict[str, Any]],
    *,
    fields: tuple[str, str] = ("parameter", "values"),
) -> tuple[GenerativeCurve, list[dict[str, Any]]]:
    """Every point run here, one after another: the curve and the runs' documents."""
    points = plan(base, parameter, values, fields=fields)
    group_id = str(uuid.uuid4())
    group = {"kind": KIND, "id": group_id, "parameter": parameter}
    documents = [
        measure(options) | {"run_id": str(uuid.uuid4()), "group": group} for options in points
    ]
    return curve_of(documents, parameter, group_id), documents
