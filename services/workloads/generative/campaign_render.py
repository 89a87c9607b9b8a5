"""Generative find-peak and sweep at 80 columns: the probes or points in a table (rates,
TTFT and TPOT at the percentile, output tokens/s, LoadGen's and the stability verdicts),
then the peak or why there is none, and what to change."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from services.core.find_peak_search import PeakResult, Probe
from services.workloads.generative.sweep import GenerativeCurve


def _number(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"


def _with_interval(figure: Mapping[str, Any] | None) -> str:
    """``estimate (low-high)``; the estimate alone where the figure has no interval."""
    if not figure:
        return "-"
    text = _number(figure.get("estimate"))
    if figure.get("low") is not None and figure.get("high") is not None:
        text += f" ({_number(figure['low'])}-{_number(figure['high'])})"
    return text


def _probe_verdict(probe: Probe) -> str:
    if not probe.passed:
        return "[red]fail[/]"
    if probe.judged:
        return "[green]pass[/]"
    return "[yellow]met, not judged[/]"


def peak_table(result: PeakResult, documents: Sequence[Mapping[str, Any]]) -> Table:
    key = f"p{result.percentile:g}"
    by_run = {str(d.get("run_id")): d for d in documents}
    table = Table(title="probes (requests/s, ms)", title_justify="left", box=None, pad_edge=False)
    for column in ("rate", "done/s", f"TTFT {key}", f"TPOT {key}", "tokens/s", "verdict"):
        table.add_column(column, justify="left" if column == "verdict" else "right")
    table.add_column("LoadGen")
    table.add_column("stability")
    for probe in sorted(result.curve, key=lambda p: p.qps):
        document = by_run.get(probe.run_id, {})
        loadgen = (document.get("loadgen") or {}).get("figures") or {}
        table.add_row(
            _number(probe.qps),
            _number(probe.completed_qps),
            _number(probe.latency_ms),
            _number(loadgen.get(f"tpot_{key}")),
            _number(loadgen.get("output_tokens_per_s")),
            _probe_verdict(probe),
            probe.validity,
            probe.stability,
        )
    return table


def _bracket(result: PeakResult) -> str:
    """Where the search stopped above the peak, when the peak is its highest pass."""
    low, high = result.bracket
    if result.peak is None or result.peak.qps != low or math.isinf(high):
        return ""
    return f"; fails at {high:.3g} (bracket {(high - low) / high:.0%} wide)"


def print_peak(
    console: Console, result: PeakResult, documents: Sequence[Mapping[str, Any]]
) -> None:
    bounds = next((d["bounds"] for d in documents if d.get("bounds")), None)
    if bounds:
        console.print(
            f"find-peak: TTFT p{bounds['percentile']:g} <= {bounds['ttft_ms']:g} ms and "
            f"TPOT p{bounds['percentile']:g} <= {bounds['tpot_ms']:g} ms, LoadGen VALID"
        )
    console.print(peak_table(result, documents))
    for probe in sorted(result.curve, key=lambda p: p.qps):
        if not probe.passed or not probe.judged:
            why = probe.reason if not probe.passed else ", ".join(probe.shortfalls())
            console.print(f"  {probe.qps:.1f} req/s: {escape(why)}")
    peak = result.peak
    if peak is None:
        console.print("[red]no valid peak[/]")
    else:
        console.print(
            f"peak: [bold]{peak.qps:.1f} requests/s[/] (TTFT p{result.percentile:g} "
            f"{peak.latency_ms:.1f} ms; {peak.validity}, stability {peak.stability})"
            + _bracket(result)
        )
    if result.reason:
        console.print(f"[yellow]why:[/] {escape(result.reason)}")
    for advice in result.advice:
        console.print(f"  try {escape(advice)}")


def sweep_table(curve: GenerativeCurve) -> Table:
    table = Table(
        title=f"{curve.scenario} sweep of {curve.parameter} (ms; 95 % intervals)",
        title_justify="left",
        box=None,
        pad_edge=False,
    )
    columns = (curve.parameter, "output tokens/s", "TTFT p50", "p99", "TPOT p50", "p99")
    for column in (*columns, "LoadGen"):
        table.add_column(column, justify="left" if column == "LoadGen" else "right")
    for point in curve.points:
        figures = point.figures
        table.add_row(
            f"{point.value:g}",
            _with_interval(figures.get("output_tokens_per_s")),
            *(
                _number((figures.get(name) or {}).get("estimate"))
                for name in ("ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99")
            ),
            point.validity,
        )
    return table


def print_sweep(console: Console, curve: GenerativeCurve) -> None:
    console.print(f"{escape(curve.model)}: {len(curve.points)} runs")
    console.print(sweep_table(curve))
    for point in curve.points:
        for reason in point.validity_reasons:
            console.print(f"  {point.value:g}: {escape(reason)}")
        if point.failed_requests:
            console.print(f"  {point.value:g}: [red]{point.failed_requests} requests failed[/]")
