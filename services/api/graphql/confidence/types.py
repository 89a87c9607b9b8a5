"""GraphQL types of a run's 95 % intervals (services/core/confidence.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import strawberry

from services.core.stored_report import LoadGenReport, load_loadgen_report


@strawberry.type(name="Interval")
class IntervalType:
    """One figure's interval; low and high are null when none can be given (reason)."""

    estimate: float | None
    low: float | None
    high: float | None
    reason: str

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> IntervalType:
        data = data or {}
        return cls(
            estimate=data.get("estimate"),
            low=data.get("low"),
            high=data.get("high"),
            reason=str(data.get("reason") or ("" if data else "not computed")),
        )


@strawberry.type(name="Confidence")
class ConfidenceType:
    """A run's intervals: a seeded bootstrap over its stability windows. Latencies are in ms
    on the SUT's own clock, which leaves out LoadGen's overhead."""

    basis: str
    units: int
    level: float
    resamples: int
    seed: int
    rule: str
    samples_per_second: IntervalType
    latency_mean: IntervalType
    latency_p50: IntervalType
    latency_p90: IntervalType
    latency_p99: IntervalType

    @classmethod
    def from_report(cls, report: Mapping[str, Any] | LoadGenReport | None) -> ConfidenceType | None:
        """None for runs without intervals (accuracy runs, runs stored before them)."""
        data = load_loadgen_report(report).confidence
        if not data:
            return None
        figures = data.get("figures") or {}
        return cls(
            basis=str(data.get("basis", "")),
            units=int(data.get("units") or 0),
            level=float(data.get("level") or 0.0),
            resamples=int(data.get("resamples") or 0),
            seed=int(data.get("seed") or 0),
            rule=str(data.get("rule", "")),
            samples_per_second=IntervalType.from_dict(figures.get("samples_per_second")),
            latency_mean=IntervalType.from_dict(figures.get("latency_mean")),
            latency_p50=IntervalType.from_dict(figures.get("latency_p50")),
            latency_p90=IntervalType.from_dict(figures.get("latency_p90")),
            latency_p99=IntervalType.from_dict(figures.get("latency_p99")),
        )
