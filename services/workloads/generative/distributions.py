"""The distributions a generative run's page draws as CDFs (TTFT and TPOT per request),
kept in its document: each request's value sorted and, above ``MAX_POINTS`` requests, cut
to evenly spaced ranks (the first and last kept), with the share of requests at or below
each. Stored with the run so the page needs no file of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.workloads.generative.sut import RequestRecord

# Points per curve: enough for a smooth step line, small enough for the stored report.
MAX_POINTS = 500


def empirical_cdf(values: Sequence[float], limit: int = MAX_POINTS) -> dict[str, Any]:
    """{"count", "values_ms", "fractions"}: the sorted values (at most ``limit`` of them,
    evenly spaced by rank) and the share of all values at or below each."""
    ordered = sorted(values)
    count = len(ordered)
    if count <= limit:
        ranks = list(range(count))
    else:
        ranks = sorted({round(i * (count - 1) / (limit - 1)) for i in range(limit)})
    return {
        "count": count,
        "values_ms": [ordered[r] for r in ranks],
        "fractions": [(r + 1) / count for r in ranks],
    }


def run_distributions(records: Sequence[RequestRecord]) -> dict[str, Any]:
    """The completed requests' TTFT and TPOT CDFs, in milliseconds."""
    done = [r for r in records if not r.failure]
    ttft = [r.ttft_ns / 1e6 for r in done if r.ttft_ns is not None]
    tpot = [r.tpot_ns / 1e6 for r in done if r.tpot_ns is not None]
    return {"ttft": empirical_cdf(ttft), "tpot": empirical_cdf(tpot)}
