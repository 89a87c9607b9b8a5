"""The headline figures of a stored report, by name, for repeats, sweeps and reruns."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from services.core.stored_report import LoadGenReport, load_loadgen_report

# name -> (unit, whether larger is better)
FIGURES: dict[str, tuple[str, bool]] = {
    "samples_per_second": ("samples/s", True),
    "latency_mean": ("ms", False),
    "latency_p50": ("ms", False),
    "latency_p90": ("ms", False),
    "latency_p99": ("ms", False),
}
# Percentiles LoadGen reports, as a user writes them -> the key in LatencyStats.
PERCENTILE_KEYS = {50.0: "p50", 90.0: "p90", 95.0: "p95", 97.0: "p97", 99.0: "p99", 99.9: "p999"}


def percentile_key(percentile: float, field: str = "--percentile") -> str:
    key = PERCENTILE_KEYS.get(float(percentile))
    if key is None:
        accepted = ", ".join(f"{p:g}" for p in PERCENTILE_KEYS)
        raise ValueError(
            f"{field}: {percentile:g} is not reported by LoadGen; accepted: {accepted}"
        )
    return key


def latency_ms(report: Mapping[str, Any] | LoadGenReport, key: str) -> float:
    latency = load_loadgen_report(report).perf.latency
    value = latency.mean_ns if key == "mean" else latency.percentiles_ns.get(key, math.nan)
    return float(value) / 1e6


def as_float(value: float | None) -> float:
    """A stored figure: null (what LoadGen did not give) reads back as NaN."""
    return math.nan if value is None else float(value)


def figures_of(stored: Mapping[str, Any] | LoadGenReport) -> dict[str, float]:
    report = load_loadgen_report(stored)
    return {
        "samples_per_second": as_float(report.perf.samples_per_second),
        "latency_mean": latency_ms(report, "mean"),
        "latency_p50": latency_ms(report, "p50"),
        "latency_p90": latency_ms(report, "p90"),
        "latency_p99": latency_ms(report, "p99"),
    }


def verdicts(stored: Mapping[str, Any] | LoadGenReport) -> tuple[str, str]:
    """(LoadGen validity, stability verdict): shown beside every performance figure."""
    report = load_loadgen_report(stored)
    return report.validity, report.stability_verdict or "UNKNOWN"
