"""Sweeps: one request expanded over batch sizes, Server target QPS or MultiStream samples
per query; the result is a throughput-versus-latency curve, one stored run per point."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from services.core.figures import figures_of, verdicts
from services.embedded.bench import BenchRequest
from shared.stored_report import load_loadgen_report

RunFn = Callable[[BenchRequest], dict[str, Any]]

# parameter -> (CLI option, the scenario it needs or None for any)
PARAMETERS: dict[str, tuple[str, str | None]] = {
    "batch_size": ("--batch-sizes", None),
    "target_qps": ("--target-qps", "server"),
    "samples_per_query": ("--samples-per-query", "multi-stream"),
}


@dataclass(frozen=True)
class CurvePoint:
    value: float
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


@dataclass
class Curve:
    id: str
    model: str
    scenario: str
    parameter: str
    points: list[CurvePoint] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def model_loads(self) -> int:
        return sum(not point.model_kept for point in self.points)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def parse_values(text: str, option: str, kind: type[int] | type[float]) -> list[Any]:
    """'1,2,4' -> [1, 2, 4]; positive, distinct, in the order given."""
    values: list[Any] = []
    for part in text.split(","):
        part = part.strip()
        try:
            value = kind(part)
        except ValueError:
            raise ValueError(
                f"{option}: {part!r} is not a number; accepted: a comma-separated list such "
                "as 1,2,4,8"
            ) from None
        if value <= 0:
            raise ValueError(f"{option}: {part} must be positive")
        if value in values:
            raise ValueError(f"{option}: {part} is listed twice")
        values.append(value)
    return values


def expand(request: BenchRequest, parameter: str, values: Sequence[Any]) -> list[BenchRequest]:
    """One request per value, each labelled with the sweep it belongs to."""
    if parameter not in PARAMETERS:
        raise ValueError(f"parameter: {parameter!r}; accepted: {', '.join(PARAMETERS)}")
    option, needs = PARAMETERS[parameter]
    if not values:
        raise ValueError(f"{option}: give at least one value")
    if needs is not None and request.scenario.scenario != needs:
        raise ValueError(
            f"{option}: sweeps a {needs} setting; add --scenario {needs} "
            f"(got {request.scenario.scenario})"
        )
    sweep_id = str(uuid.uuid4())
    expanded = []
    for value in values:
        group = {"kind": "sweep", "id": sweep_id, "parameter": parameter, "value": value}
        if parameter == "batch_size":
            expanded.append(replace(request, batch_size=int(value), group=group))
        else:
            scenario = request.scenario.model_copy(update={parameter: value})
            expanded.append(replace(request, scenario=scenario, group=group))
    return expanded


def point_of(value: float, report: dict[str, Any]) -> CurvePoint:
    figures = figures_of(report)
    validity, stability = verdicts(report)
    timings = load_loadgen_report(report).timings
    return CurvePoint(
        value=value,
        run_id=load_loadgen_report(report).run_id,
        samples_per_second=figures["samples_per_second"],
        latency_p50_ms=figures["latency_p50"],
        latency_p90_ms=figures["latency_p90"],
        latency_p99_ms=figures["latency_p99"],
        validity=validity,
        stability=stability,
        model_kept=timings.get("model_cache_hit") == 1.0,
        model_load_s=float(load) if (load := timings.get("model_load_s")) is not None else None,
    )


def run_sweep(
    request: BenchRequest,
    parameter: str,
    values: Sequence[Any],
    run: RunFn,
    on_point: Callable[[CurvePoint], None] = lambda point: None,
) -> Curve:
    """Run every point in the order given; ``run`` stores each run and returns its report."""
    requests = expand(request, parameter, values)
    assert requests[0].group is not None
    curve = Curve(
        id=requests[0].group["id"],
        model=request.model,
        scenario=request.scenario.scenario,
        parameter=parameter,
    )
    for value, point_request in zip(values, requests, strict=True):
        point = point_of(value, run(point_request))
        curve.points.append(point)
        on_point(point)
    return curve
