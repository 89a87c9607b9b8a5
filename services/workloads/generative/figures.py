"""A generative run's figures from the SUT's request records, each with its interval
(intervals.py): TTFT, TPOT, inter-token (ITL) and end-to-end latency percentiles, output
and total tokens/s, requests/s and goodput (requests/s whose TTFT and TPOT both meet the
objectives).

Rates are a count over the run's span (first issue to last completion): output tokens/s
is every output token over that time, never a mean of per-request rates. Failed requests
count no token and no request, but their time stays in the span. LoadGen's own figures
and verdict are read beside these (verdict.py); they are the judged ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from services.core.confidence import Interval
from services.workloads.generative.bounds import TokenBounds
from services.workloads.generative.intervals import (
    RULE,
    percentile_interval,
    pooled_percentile_interval,
    rate_interval,
    rate_windows,
)
from services.workloads.generative.sut import RequestRecord

PERCENTILES = (50, 90, 99)
# Figure -> unit, in the order a table shows them.
UNITS: dict[str, str] = {
    **{f"ttft_p{p}": "ms" for p in PERCENTILES},
    **{f"tpot_p{p}": "ms" for p in PERCENTILES},
    **{f"itl_p{p}": "ms" for p in PERCENTILES},
    **{f"latency_p{p}": "ms" for p in PERCENTILES},
    "output_tokens_per_s": "tokens/s",
    "total_tokens_per_s": "tokens/s",
    "requests_per_s": "requests/s",
    "goodput": "requests/s",
}
OFFLINE_LATENCY = (
    "Offline issues every request at once: a latency is its place in the queue, not the engine's"
)


def _ms(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e6


def _latencies(done: Sequence[RequestRecord], scenario: str) -> dict[str, Interval]:
    series = {
        "ttft": [_ms(r.ttft_ns) for r in done],
        "tpot": [_ms(r.tpot_ns) for r in done],
        "latency": [_ms(r.latency_ns) for r in done],
    }
    figures = {}
    for name, values in series.items():
        present = [v for v in values if v is not None]
        for p in PERCENTILES:
            interval = percentile_interval(present, p / 100)
            if scenario == "offline":
                interval = Interval(interval.estimate, reason=OFFLINE_LATENCY)
            figures[f"{name}_p{p}"] = interval
    # Inter-token latency: every gap between token arrivals, pooled over the requests.
    gaps = [[g / 1e6 for g in r.gaps_ns] for r in done]
    for p in PERCENTILES:
        figures[f"itl_p{p}"] = pooled_percentile_interval(gaps, p / 100)
    return figures


def meets(record: RequestRecord, bounds: TokenBounds) -> bool:
    """Whether one request met both objectives (its TTFT and its TPOT)."""
    ttft, tpot = record.ttft_ns, record.tpot_ns
    return (
        not record.failure
        and ttft is not None
        and tpot is not None
        and ttft <= bounds.ttft_ms * 1e6
        and tpot <= bounds.tpot_ms * 1e6
    )


def run_figures(
    records: Sequence[RequestRecord], scenario: str, bounds: TokenBounds | None
) -> dict[str, Interval]:
    """Every figure of UNITS, from the records of one run."""
    ended = sorted((r for r in records if r.end_ns is not None), key=lambda r: r.end_ns or 0)
    done = [r for r in ended if not r.failure]
    figures = _latencies(done, scenario)
    if not ended:
        return figures | {
            n: Interval(None, reason="no completed request") for n in UNITS if n not in figures
        }
    start_s = min(r.issued_ns for r in ended) / 1e9
    ends_s = [(r.end_ns or 0) / 1e9 for r in ended]
    span_s = ends_s[-1] - start_s
    windows = rate_windows(ends_s, start_s)
    output = [0 if r.failure else r.output_tokens for r in ended]
    figures["output_tokens_per_s"] = rate_interval(output, span_s, windows)
    total = [o + (0 if r.failure else r.prompt_tokens) for o, r in zip(output, ended, strict=True)]
    figures["total_tokens_per_s"] = rate_interval(total, span_s, windows)
    figures["requests_per_s"] = rate_interval(
        [0 if r.failure else 1 for r in ended], span_s, windows
    )
    if bounds is None:
        figures["goodput"] = Interval(
            None, reason="no TTFT/TPOT objectives: a Server run sets them"
        )
    else:
        good = [1 if meets(r, bounds) else 0 for r in ended]
        figures["goodput"] = rate_interval(good, span_s, windows)
    return figures


def request_counts(records: Sequence[RequestRecord]) -> dict[str, Any]:
    """Completed and failed requests, the failures by reason, and the tokens produced."""
    failures: dict[str, int] = {}
    for record in records:
        if record.failure:
            failures[record.failure] = failures.get(record.failure, 0) + 1
    return {
        "issued": len(records),
        "completed": sum(1 for r in records if not r.failure),
        "failed": sum(failures.values()),
        "failures": failures,
        "output_tokens": sum(r.output_tokens for r in records if not r.failure),
        "prompt_tokens": sum(r.prompt_tokens for r in records if not r.failure),
    }


def figures_document(figures: dict[str, Interval]) -> dict[str, Any]:
    return {
        "rule": RULE,
        "figures": {
            name: {**asdict(interval), "unit": UNITS[name]} for name, interval in figures.items()
        },
    }
