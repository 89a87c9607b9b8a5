"""Latency, throughput, validity and accuracy figures, built from raw values and LoadGen logs."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from services.core.loadgen_logs import parse_detail, parse_summary

PERCENTILES = (50.0, 90.0, 95.0, 97.0, 99.0, 99.9)


def _pkey(p: float) -> str:
    return "p" + (f"{p:g}".replace(".", ""))  # 99.9 -> p999, 50 -> p50


@dataclass(frozen=True)
class LatencyStats:
    """Latencies in nanoseconds."""

    count: int
    min_ns: float
    mean_ns: float
    max_ns: float
    percentiles_ns: dict[str, float]

    @classmethod
    def from_values(cls, values_ns: list[int] | np.ndarray) -> LatencyStats:
        arr = np.asarray(values_ns, dtype=np.float64)
        if arr.size == 0:
            return cls(0, math.nan, math.nan, math.nan, {_pkey(p): math.nan for p in PERCENTILES})
        pct = np.percentile(arr, PERCENTILES, method="higher")
        return cls(
            count=int(arr.size),
            min_ns=float(arr.min()),
            mean_ns=float(arr.mean()),
            max_ns=float(arr.max()),
            percentiles_ns={_pkey(p): float(v) for p, v in zip(PERCENTILES, pct, strict=True)},
        )

    @classmethod
    def from_loadgen(cls, detail: dict[str, Any]) -> LatencyStats:
        # MultiStream's figures are per query (a query carries several samples).
        per_query = "result_mean_query_latency_ns" in detail
        stat = "query_latency_ns" if per_query else "latency_ns"
        pct = "percentile_per_query_latency_ns" if per_query else "percentile_latency_ns"
        return cls(
            count=int(detail.get("result_query_count", 0)),
            min_ns=float(detail.get(f"result_min_{stat}", math.nan)),
            mean_ns=float(detail.get(f"result_mean_{stat}", math.nan)),
            max_ns=float(detail.get(f"result_max_{stat}", math.nan)),
            percentiles_ns={
                _pkey(p): float(detail.get(f"result_{p:.2f}_{pct}", math.nan)) for p in PERCENTILES
            },
        )

    def ms(self, key: str) -> float:
        value = {"min": self.min_ns, "mean": self.mean_ns, "max": self.max_ns}.get(key)
        return (value if value is not None else self.percentiles_ns[key]) / 1e6


@dataclass(frozen=True)
class Validity:
    result: str  # "VALID" or "INVALID", LoadGen's verdict
    min_duration_met: bool
    min_queries_met: bool
    early_stopping_met: bool | None  # None where the scenario has no early stopping
    reasons: list[str]
    early_stopping_result: str = ""

    @property
    def is_valid(self) -> bool:
        return self.result == "VALID"


@dataclass(frozen=True)
class Headline:
    """The figure LoadGen puts first in its summary for this scenario, verbatim."""

    name: str
    value: float
    unit: str


@dataclass(frozen=True)
class PerformanceReport:
    scenario: str
    mode: str
    validity: Validity
    latency: LatencyStats
    headline: Headline
    qps: float  # LoadGen's "QPS w/ loadgen overhead" where it reports one
    samples_per_second: float
    query_count: int
    sample_count: int
    samples_per_query: int
    duration_s: float
    loadgen_version: str
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # Server: the rate LoadGen's Poisson schedule actually issued at (find-peak compares the
    # completed rate with it to tell "kept up" from "fell behind").
    scheduled_samples_per_second: float = math.nan
    # Figures benchstack computed because LoadGen's logs do not state them for the scenario.
    derived: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def invalidated(self, reason: str) -> PerformanceReport:
        """This report marked INVALID for a reason LoadGen could not see."""
        validity = replace(
            self.validity, result="INVALID", reasons=[*self.validity.reasons, reason]
        )
        return replace(self, validity=validity)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PerformanceReport:
        return cls(
            **{
                **data,
                "validity": Validity(**data["validity"]),
                "latency": LatencyStats(**data["latency"]),
                "headline": Headline(**data["headline"]),
            }
        )

    @classmethod
    def from_logs(cls, summary_text: str, detail_text: str) -> PerformanceReport:
        summary = parse_summary(summary_text)
        detail = parse_detail(detail_text)
        scenario = str(summary.get("Scenario", detail.get("effective_scenario", "")))
        samples_per_query = int(detail.get("effective_samples_per_query", 1) or 1)
        query_count = int(detail.get("result_query_count", 0))
        validity = _validity(summary, detail)
        headline = _headline(scenario, summary)
        derived: list[str] = []
        latency = LatencyStats.from_loadgen(detail)
        qps = float(summary.get("QPS w/ loadgen overhead", math.nan))
        if scenario == "Offline":
            samples_per_second = float(summary.get("Samples per second", math.nan))
        elif scenario == "Server":
            samples_per_second = float(summary.get("Completed samples per second", math.nan))
        elif scenario == "MultiStream":
            # LoadGen reports no throughput here; queries run back to back, so a query's
            # samples over its mean latency is (nearly) the rate the SUT sustained. Marked
            # as derived: it is benchstack's figure, not LoadGen's.
            samples_per_second = samples_per_query * 1e9 / latency.mean_ns
            derived.append("samples_per_second")
        else:
            samples_per_second = qps * samples_per_query
        scheduled = float(summary.get("Scheduled samples per second", math.nan))
        if scenario == "Offline":
            duration_s = float(detail.get("result_max_latency_ns", math.nan)) / 1e9
        elif scenario == "Server":
            duration_s = query_count * samples_per_query / scheduled
        elif scenario == "MultiStream":
            duration_s = query_count * latency.mean_ns / 1e9
        else:
            duration_s = query_count / qps if qps else math.nan
        derived.append("duration_s")
        return cls(
            scenario=scenario,
            mode=str(summary.get("Mode", detail.get("effective_test_mode", ""))),
            validity=validity,
            latency=latency,
            headline=headline,
            qps=qps,
            samples_per_second=samples_per_second,
            query_count=query_count,
            sample_count=query_count * samples_per_query,
            samples_per_query=samples_per_query,
            duration_s=duration_s,
            loadgen_version=str(detail.get("loadgen_version", "")),
            warnings=list(detail["warnings"]),
            errors=list(detail["errors"]),
            scheduled_samples_per_second=scheduled,
            derived=derived,
        )


def _validity(summary: dict[str, Any], detail: dict[str, Any]) -> Validity:
    result = str(detail.get("result_validity", summary.get("Result is", "INVALID")))
    min_duration = bool(detail.get("result_min_duration_met", False))
    min_queries = bool(detail.get("result_min_queries_met", False))
    early = detail.get("early_stopping_met")
    reasons: list[str] = []
    if not min_duration:
        # The facts only: the likely cause (and its fix) is evaluation.hints' job, since
        # "run longer" is wrong for an Offline run sized too small or a busy machine.
        reasons.append("min duration not satisfied")
    if not min_queries:
        reasons.append("min query count not satisfied")
    if early is False:
        reasons.append("early stopping not satisfied: too few queries for the target percentile")
    latency_met = summary.get("Performance constraints satisfied")
    if latency_met == "NO":
        reasons.append("latency constraint not met: the percentile exceeds the target latency")
    loadgen_reason = str(detail.get("result_invalid_reason", "")).strip()
    if loadgen_reason:
        reasons.append(f"LoadGen: {loadgen_reason}")
    if result != "VALID" and not reasons:
        reasons.append("LoadGen reported INVALID; see the detail log")
    return Validity(
        result=result,
        min_duration_met=min_duration,
        min_queries_met=min_queries,
        early_stopping_met=None if early is None else bool(early),
        reasons=reasons,
        early_stopping_result=str(detail.get("early_stopping_result", "")).strip(),
    )


def _headline(scenario: str, summary: dict[str, Any]) -> Headline:
    for key, value in summary.items():
        if key in {"SUT name", "Scenario", "Mode", "Result is"}:
            continue
        # The first figure after the header is LoadGen's headline for the scenario.
        if isinstance(value, (int, float)):
            unit = "ns" if "(ns)" in key else ("samples/s" if "per second" in key else "")
            return Headline(name=key, value=float(value), unit=unit)
    return Headline(name="", value=math.nan, unit="")


@dataclass(frozen=True)
class AccuracyReport:
    sample_count: int
    top1: float  # percent
    top5: float | None
    per_class_correct: dict[str, int] = field(default_factory=dict)
    # Labelled samples whose batch failed: scored as wrong, counted here so it shows.
    missing_outputs: int = 0
    # Why the figures may not mean what they say (class folders vs the model's labels).
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Window:
    """One measurement window of a run: completions between two instants."""

    start_s: float  # from the first sample the SUT received
    end_s: float
    samples: int
    completions: int  # completion events (a batch completes as one event)
    samples_per_second: float
    median_latency_ms: float
    # Server only: samples completed / samples that arrived in the window (1.0: kept up).
    keep_up: float | None = None


@dataclass(frozen=True)
class Stability:
    """Whether a run reached a steady state, judged on its last measurement windows.

    ``verdict`` is STABLE, UNSTABLE, INSUFFICIENT (too few completions to judge) or
    NOT_APPLICABLE (accuracy runs). Spreads are max/min - 1 over the judged windows.
    """

    verdict: str
    rule: str
    tolerance: float
    judged_windows: int
    throughput_spread: float | None
    latency_spread: float | None
    windows: list[Window]
    reasons: list[str] = field(default_factory=list)

    @property
    def is_stable(self) -> bool:
        return self.verdict == "STABLE"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Stability:
        return cls(**{**data, "windows": [Window(**w) for w in data.get("windows", [])]})
