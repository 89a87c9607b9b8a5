"""A stored report read back typed: the one way in for every reader of ``Run.report``.

A LoadGen run's report is ``RunReport.to_dict``'s JSON; a workload without LoadGen logs
(DLBricks, training) stores its outcome document under its kind
(``services/aggregator/outcomes.py``). ``load_report`` turns either into its typed form, the
union ``StoredReport``. Readers use attributes, never string keys (tests/shared/
test_stored_report_reads.py counts what is left).

Rows stored by older versions lack sections or fields: a missing section reads as None
(an empty dict or list where the section is a mapping or list), a missing figure as NaN,
a missing verdict as "", so an old run renders as it did, with "-" where nothing was
measured. A stored null figure is NaN again (the inverse of ``json_safe``).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from services.core.metrics import AccuracyReport, LatencyStats, PerformanceReport, Stability
from services.core.run_report import RunSettings

T = TypeVar("T")


@dataclass(frozen=True)
class LoadGenReport:
    """A LoadGen run's stored report (``RunReport.to_dict``'s shape), typed."""

    run_id: str = ""
    evaluation_id: str | None = None
    created_at: str = ""
    model: dict[str, Any] = field(default_factory=dict)  # name, version
    framework: dict[str, Any] = field(default_factory=dict)  # the backend's describe()
    scenario: str = ""
    mode: str = ""
    batch_size: int | None = None
    settings: RunSettings | None = None
    dataset: dict[str, Any] = field(default_factory=dict)  # name, samples, failed
    preprocessing: dict[str, Any] = field(default_factory=dict)
    performance: PerformanceReport | None = None
    stability: Stability | None = None
    confidence: dict[str, Any] | None = None
    seeds: dict[str, Any] = field(default_factory=dict)
    group: dict[str, Any] | None = None
    accuracy: AccuracyReport | None = None
    sut_latency: LatencyStats | None = None
    warm_up: dict[str, Any] = field(default_factory=dict)
    failed_samples: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    host: dict[str, Any] = field(default_factory=dict)
    agent: dict[str, Any] = field(default_factory=dict)
    agent_id: str = ""
    environment: dict[str, Any] = field(default_factory=dict)
    profile: dict[str, Any] | None = None
    timings: dict[str, Any] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)  # logical name -> where a person finds it
    log_keys: dict[str, str] = field(default_factory=dict)  # logical name -> object key
    log_prefix: str = ""

    @property
    def validity(self) -> str:
        """LoadGen's verdict; "" for a report without a performance section."""
        return self.performance.validity.result if self.performance else ""

    @property
    def perf(self) -> PerformanceReport:
        """The performance section, or an empty one (NaN figures, no verdict) where an
        older report has none."""
        return self.performance or typed(PerformanceReport, {})

    @property
    def stability_verdict(self) -> str | None:
        return self.stability.verdict if self.stability else None


@dataclass(frozen=True)
class OutcomeReport:
    """A workload's own outcome (DLBricks, training): its document under its kind."""

    kind: str
    document: dict[str, Any]
    run_id: str = ""
    evaluation_id: str | None = None
    logs: dict[str, str] = field(default_factory=dict)
    # A top-level ``host`` beside the document, read as a LoadGen report's. The aggregator
    # stores none (a training session's host is inside its document): kept as the fan-out
    # row read it, so a training row's host_busy stays what it was.
    host: dict[str, Any] = field(default_factory=dict)
    # The run's group record, as a LoadGen report's (a training scaling's rank).
    group: dict[str, Any] | None = None


StoredReport = LoadGenReport | OutcomeReport


def load_report(data: Mapping[str, Any] | StoredReport | None) -> StoredReport:
    """The typed form of a stored report (a typed one is returned as it is)."""
    if isinstance(data, LoadGenReport | OutcomeReport):
        return data
    data = data or {}
    kind = data.get("kind")
    if isinstance(kind, str) and isinstance(data.get(kind), dict):
        return OutcomeReport(
            kind=kind,
            document=dict(data[kind]),
            run_id=str(data.get("run_id") or ""),
            evaluation_id=data.get("evaluation_id"),
            logs=dict(data.get("logs") or {}),
            host=dict(data.get("host") or {}),
            group=dict(data["group"]) if data.get("group") else None,
        )
    return typed(LoadGenReport, data)


def load_loadgen_report(data: Mapping[str, Any] | StoredReport | None) -> LoadGenReport:
    """A LoadGen run's report; a workload outcome reads as an empty one (no sections)."""
    report = load_report(data)
    return report if isinstance(report, LoadGenReport) else LoadGenReport(run_id=report.run_id)


def typed(cls: type[T], data: Mapping[str, Any]) -> T:
    """``cls`` (a dataclass of report sections) from stored JSON, leniently: unknown keys
    are dropped, a missing field takes its default or its type's empty value."""
    made: T = _converter(cls)(data)
    return made


Convert = Callable[[Any], Any]
# One converter per annotation, built once: resolving annotations and walking a class's
# fields on every read would cost more than the read (reports are read in loops).
_CONVERTERS: dict[Any, Convert] = {}


def _converter(hint: Any) -> Convert:
    found = _CONVERTERS.get(hint)
    if found is None:
        found = _CONVERTERS[hint] = _build(hint)
    return found


def _build(hint: Any) -> Convert:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in args if a is not type(None)]
        return _optional(_converter(inner), section=dataclasses.is_dataclass(inner))
    if dataclasses.is_dataclass(hint):
        return _section(hint)  # type: ignore[arg-type]
    if hint is float:
        return lambda v: math.nan if v is None else float(v)
    if origin is dict:
        item = _converter(args[1]) if args else _same
        return lambda v: {} if v is None else {k: item(x) for k, x in v.items()}
    if origin is list:
        element = _converter(args[0]) if args else _same
        return lambda v: [element(x) for x in v or []]
    if hint in (int, str):
        empty = hint()
        return lambda v: empty if v is None else v
    return _same


def _same(value: Any) -> Any:
    return value


def _optional(convert: Convert, *, section: bool) -> Convert:
    def optional(value: Any) -> Any:
        # An absent or empty optional section is None: "not recorded", as readers say.
        if value is None or (section and value == {}):
            return None
        return convert(value)

    return optional


def _section(cls: type) -> Convert:
    hints = typing.get_type_hints(cls)
    plan = [
        (
            item.name,
            _converter(hints[item.name]),
            item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING,
            hints[item.name],
        )
        for item in dataclasses.fields(cls)
    ]

    def section(value: Any) -> Any:
        data = value if isinstance(value, Mapping) else {}
        values: dict[str, Any] = {}
        for name, convert, required, hint in plan:
            if name in data:
                values[name] = convert(data[name])
            elif required:
                values[name] = _empty(hint)
        return cls(**values)

    return section


def _empty(hint: Any) -> Any:
    """The value of a field an older report lacks."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return None
    if dataclasses.is_dataclass(hint):
        return _converter(hint)({})
    return {float: math.nan, int: 0, str: "", bool: False, dict: {}, list: []}.get(origin or hint)
