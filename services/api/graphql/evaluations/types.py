"""GraphQL types of the evaluations domain: Evaluation, Run, Metric, LogLink."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any

import strawberry
from sqlalchemy import select
from sqlalchemy.orm import Session
from strawberry.scalars import JSON

from services.api.graphql.confidence.types import ConfidenceType
from services.api.graphql.evaluations.charts import (
    chart_field,
    flame_chart,
    timeline_chart,
)
from services.api.graphql.evaluations.operator_types import OperatorsType
from services.api.graphql.evaluations.roofline_types import RooflineType
from services.api.graphql.evaluations.shown_figure_types import (
    ShownFigureType,
    shown_figure_types,
)
from services.api.graphql.public_paths import public
from services.api.graphql.scalars import copied, to_json
from services.api.graphql.workload_fields import results_of, with_results
from services.api.run_charts import (
    DEFAULT_LATENCY_POINTS,
    DEFAULT_TRACE_SPANS,
    LATENCIES_FILE,
    MAX_LATENCY_POINTS,
    MAX_TRACE_SPANS,
    TRACE_FILE,
    LatencySample,
    TraceTimeline,
    latency_sample,
)
from services.api.trace_tree import DEFAULT_FLAME_NODES, MAX_FLAME_NODES, FlameGraph
from services.core.manifest_sections import stored_fidelity
from services.core.stored_report import load_loadgen_report, load_report
from shared.db.evaluations import Evaluation as EvaluationRow
from shared.db.models import Run as RunRow
from shared.db.states import FINAL_STATE_NAMES, EvaluationState

if TYPE_CHECKING:
    from services.api.context import ApiDeps


@strawberry.enum(name="EvaluationState")
class EvaluationStateType(Enum):
    QUEUED = "QUEUED"
    PREPROCESSING = "PREPROCESSING"
    RUNNING = "RUNNING"
    AGGREGATING = "AGGREGATING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


@strawberry.type(name="Metric")
class MetricType:
    name: str
    value: float
    unit: str


@strawberry.type
class LogLink:
    name: str
    # The object's key in the store (never a path of the server) and the API route that
    # serves it.
    location: str
    url: str


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


@strawberry.type(name="Layer")
class LayerType:
    """One layer of a profiled run (its FRAMEWORK pass, warm iterations; cold: the first
    inference after loading)."""

    name: str
    type: str
    input_shapes: list[list[int]]
    calls: int
    mean_ms: float
    median_ms: float
    # The interquartile range over the warm iterations: the median's spread.
    iqr_ms: float | None
    # Of the model's median latency, from the layer's median.
    percent: float
    # Bytes of the layer's outputs; a Float, since GraphQL's Int stops at 2**31.
    memory_bytes: float
    cold_ms: float | None
    # A module's own work outside its submodules (attention), not a leaf layer.
    own: bool
    # What the layer itself allocates per iteration and the most its call raised the
    # allocator's total (LIBRARY pass, torch.profiler's memory events); null without one.
    allocated_bytes: float | None
    peak_rise_bytes: float | None

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> LayerType:
        """A row of the stored profile's ``layers`` (``profiling.analysis.layer_table``)."""
        cold = row.get("cold_ms")
        return cls(
            name=str(row["name"]),
            type=str(row.get("type", "")),
            input_shapes=[[int(d) for d in shape] for shape in row.get("input_shapes", [])],
            calls=int(row.get("calls", 0)),
            mean_ms=float(row["mean_ms"]),
            median_ms=float(row["median_ms"]),
            iqr_ms=None if row.get("iqr_ms") is None else float(row["iqr_ms"]),
            percent=float(row["percent"]),
            memory_bytes=float(row.get("memory_bytes", 0)),
            cold_ms=None if cold is None else float(cold),
            own=bool(row.get("own", False)),
            allocated_bytes=_float_or_none(row.get("allocated_bytes")),
            peak_rise_bytes=_float_or_none(row.get("peak_rise_bytes")),
        )


@strawberry.type(name="Run")
@with_results
class RunType:
    id: str
    evaluation_id: str | None
    created_at: datetime
    model_name: str
    model_version: str
    framework: str
    framework_version: str
    scenario: str
    mode: str
    batch_size: int
    dataset: str
    validity: str
    # The run's stability verdict (STABLE, UNSTABLE, INSUFFICIENT, NOT_APPLICABLE), shown
    # beside every figure as validity is; null for runs stored before it was recorded.
    stability: str | None
    samples_per_second: float | None
    # 95 % intervals of the figures; null for accuracy runs and runs stored before them.
    confidence: ConfidenceType | None
    # What a page may show: each figure with its interval and verdicts (busy host too).
    shown_figures: list[ShownFigureType]
    preprocess_reused: bool
    metrics: list[MetricType]
    environment: JSON
    settings: JSON
    report: JSON
    logs: list[LogLink]
    # The leveled profile (trace level above NONE): passes, layers, coverage; else null.
    profile: JSON | None
    layers: list[LayerType]
    # Each layer against this machine's measured peaks (torch FRAMEWORK profiles); else null.
    roofline: RooflineType | None
    # The operators and kernels `benchstack profile` prints (LIBRARY pass); else null.
    operators: OperatorsType | None
    # The Chrome/Perfetto trace JSON stored with the run; null without a trace level.
    trace_file: LogLink | None
    # Each workload's outcome type, one field per workload that declares one, named after
    # it (e.g. `training`: settings, images/s with its interval, step times), added here
    # (graphql/workload_fields.py); null for a run of another kind.
    # Logical file name -> object key: what the chart fields below read.
    log_keys: strawberry.Private[dict[str, str]]

    latency_sample = chart_field(
        LATENCIES_FILE,
        latency_sample,
        LatencySample,
        (DEFAULT_LATENCY_POINTS, MAX_LATENCY_POINTS),
        "The run's per-sample latencies for its charts: all of them up to "
        f"`limit` (1 to {MAX_LATENCY_POINTS}), else `limit` evenly spaced order statistics.",
    )
    trace_timeline = chart_field(
        TRACE_FILE,
        timeline_chart,
        TraceTimeline,
        (DEFAULT_TRACE_SPANS, MAX_TRACE_SPANS),
        "The spans of the run's trace.json for a timeline: all of them up to "
        f"`limit` (1 to {MAX_TRACE_SPANS}), else the longest; null without a trace.",
    )
    trace_flame = chart_field(
        TRACE_FILE,
        flame_chart,
        FlameGraph,
        (DEFAULT_FLAME_NODES, MAX_FLAME_NODES),
        "The run's trace.json as a flame graph: spans nested per thread, summed "
        f"per stack path; all paths up to `limit` (1 to {MAX_FLAME_NODES}), else those with "
        "the most time; null without a trace.",
    )

    @classmethod
    def from_row(cls, row: RunRow) -> RunType:
        # The stored object keys, as stored: what the chart fields read (never served).
        log_keys = load_loadgen_report(row.report).log_keys
        # Every served field is read from the report as clients may see it (no server path).
        shown: dict[str, Any] = public(row.report or {})
        stored = load_report(shown)
        report = load_loadgen_report(stored)
        # Where each log is: its object key (an old row's stored location, filtered).
        log_locations: dict[str, Any] = {**stored.logs, **public(log_keys)}
        profile = report.profile
        links = [
            LogLink(name=name, location=str(where), url=f"/runs/{row.id}/logs/{name}")
            for name, where in sorted(log_locations.items())
        ]
        return copied(
            cls,
            row,
            dataset=public(row.dataset),
            stability=report.stability_verdict,
            confidence=ConfidenceType.from_report(report),
            shown_figures=shown_figure_types(stored),
            metrics=[MetricType(name=m.name, value=m.value, unit=m.unit) for m in row.metrics],
            environment=to_json(public(row.environment)),
            settings=to_json(public(row.settings)),
            report=to_json(shown),
            logs=links,
            profile=to_json(profile) if profile else None,
            layers=[LayerType.from_dict(r) for r in (profile or {}).get("layers", [])],
            roofline=RooflineType.from_dict((profile or {}).get("roofline")),
            operators=OperatorsType.from_profile(profile),
            trace_file=next((link for link in links if link.name == TRACE_FILE), None),
            **results_of(shown),
            log_keys={str(k): str(v) for k, v in log_keys.items()},
        )


def _group_kind(info: dict[str, Any] | None) -> str | None:
    kind = (info or {}).get("kind")
    return None if kind is None else str(kind)


def load_runs(deps: ApiDeps, evaluation_ids: list[str]) -> list[list[RunType]]:
    """Runs of each evaluation, in the order of the ids asked for (one query for all): the
    batch of the request's runs loader (``Context.loader``)."""
    with deps.read_db() as session:
        return runs_of(session, evaluation_ids)


def runs_of(session: Session, evaluation_ids: list[str]) -> list[list[RunType]]:
    """As load_runs, in a session the caller holds (to prime the loader with no second trip
    to the database)."""
    rows = session.scalars(
        select(RunRow).where(RunRow.evaluation_id.in_(evaluation_ids)).order_by(RunRow.created_at)
    )
    by_evaluation: dict[str, list[RunType]] = {i: [] for i in evaluation_ids}
    for row in rows:
        if row.evaluation_id is not None:
            by_evaluation[row.evaluation_id].append(RunType.from_row(row))
    return [by_evaluation[i] for i in evaluation_ids]


@strawberry.type(name="Evaluation")
class EvaluationType:
    id: str
    state: EvaluationStateType
    reason: str
    model_name: str
    model_version: str
    framework: str
    device: str
    scenario: JSON
    batch_size: int
    dataset: str
    samples: int | None
    trace_level: str
    # What was measured (services/workloads/<name>: "loadgen", "training", "bricks", ...)
    # and the options the submission gave it (null: none); a training evaluation's
    # scenario is not used.
    workload: str
    workload_options: JSON | None
    # How the model's images are prepared: the stored manifest's Input.fidelity
    # ("reference": torchvision's bits; "fast": at most one level off).
    preprocessing: str
    # Intra-op threads the submission asked for (a find-peak's probes: the first probe's);
    # null: the agent's setting or its choice, which each run's environment records.
    threads: int | None
    constraints: JSON
    queue: str
    agent_id: str | None
    run_id: str | None
    # The fan-out this evaluation belongs to (compare(groupId)); null for a single one.
    group_id: str | None
    # What kind of group: "training-scaling", "sweep", ...; null for a fan-out or none.
    group_kind: str | None
    shards_total: int
    shards_ready: int
    preprocess_reused: bool
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None

    @strawberry.field
    def done(self) -> bool:
        return self.state.value in FINAL_STATE_NAMES

    @strawberry.field
    async def runs(self, info: strawberry.Info) -> list[RunType]:
        result: list[RunType] = await info.context.loader(load_runs).load(self.id)
        return result

    @strawberry.field(description="The layers of the evaluation's latest profiled run.")
    async def layers(self, info: strawberry.Info) -> list[LayerType]:
        runs: list[RunType] = await info.context.loader(load_runs).load(self.id)
        return next((run.layers for run in reversed(runs) if run.layers), [])

    @strawberry.field(description="The trace JSON of the evaluation's latest profiled run.")
    async def trace_file(self, info: strawberry.Info) -> LogLink | None:
        runs: list[RunType] = await info.context.loader(load_runs).load(self.id)
        return next((run.trace_file for run in reversed(runs) if run.trace_file), None)

    @classmethod
    def from_row(cls, row: EvaluationRow, *, waiting: str = "") -> EvaluationType:
        """``waiting``: why a stalled evaluation is not moving (``worker_repo``)."""
        return copied(
            cls,
            row,
            state=EvaluationStateType(EvaluationState(row.state).value),
            reason=public(row.reason or waiting),
            # The stored spec is the folder's path on the server; the client named it
            # relative to the datasets folder, and reads it so.
            dataset=public(row.dataset),
            scenario=to_json(row.scenario),
            samples=row.dataset_count,
            workload=row.workload or "loadgen",
            workload_options=to_json(public(row.workload_options))
            if row.workload_options
            else None,
            preprocessing=stored_fidelity(row.manifest),
            constraints=to_json(row.constraints),
            group_kind=_group_kind(row.group_info),
        )


@strawberry.type
class EvaluationPage:
    items: list[EvaluationType]
    total_count: int
    # Pass as `after` for the next page; null on the last page.
    next_cursor: str | None
