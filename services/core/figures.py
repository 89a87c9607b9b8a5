"""The headline figures of a stored report, by name, for repeats, sweeps and reruns."""

from __future__ import annotations

import math
from typing import Any

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


def latency_ms(report: dict[str, Any], key: str) -> float:
    latency = report["performance"]["latency"]
    value = latency["mean_ns"] if key == "mean" else latency["percentiles_ns"][key]
    return math.nan if value is None else float(value) / 1e6


def as_float(value: float | None) -> float:
    """A stored figure: null (what LoadGen did not give) reads back as NaN."""
    return math.nan if value is None else float(value)


def figures_of(report: dict[str, Any]) -> dict[str, float]:
    perf = report["performance"]
    return {
        "samples_per_second": as_float(perf["samples_per_second"]),
        "latency_mean": latency_ms(report, "mean"),
        "latency_p50": latency_ms(report, "p50"),
        "latency_p90": latency_ms(report, "p90"),
        "latency_p99": latency_ms(report, "p99"),
    }


def verdicts(report: dict[str, Any]) -> tuple[str, str]:
    """(LoadGen validity, stability verdict): shown beside every performance figure."""
    stability = report.get("stability") or {}
    return report["performance"]["validity"]["result"], stability.get("verdict", "UNKNOWN")
