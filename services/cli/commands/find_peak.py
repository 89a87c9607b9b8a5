"""`benchstack find-peak MODEL --latency-bound-ms X`: the highest Server QPS under a bound."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from services.campaigns.drive import find_peak
from services.cli.bench_options import (
    MODEL,
    BenchOptions,
)
from services.cli.errors import user_errors
from services.cli.progress import ProgressBars
from services.cli.render import PIPED_WIDTH, output_console
from services.cli.run_options import takes_run_options
from services.cli.tables import RUN_ID_PREFIX, Column, fitted_table
from services.core.campaigns.find_peak import SearchSettings
from services.core.find_peak_search import PeakResult
from services.core.stored_report import load_loadgen_report


def peak_table(result: PeakResult, width: int = PIPED_WIDTH) -> Table:
    pct = f"p{result.percentile:g}"
    # At a narrow console the probe, its figures, verdict and run id stay.
    columns = (
        Column("target QPS", priority=100, wrap=False, justify="right"),
        Column("completed/s", priority=60, wrap=False, justify="right"),
        Column(f"{pct} ms", priority=90, wrap=False, justify="right"),
        Column("verdict", priority=85, min_width=12),
        Column("validity", priority=50, wrap=False, justify="right"),
        Column("stability", priority=40, min_width=9, justify="right"),
        Column("run", priority=95, wrap=False),
    )
    rows = []
    for probe in sorted(result.curve, key=lambda p: p.qps):
        if not probe.passed:
            verdict = f"[red]fail[/]: {probe.reason}"
        elif probe.judged:
            verdict = "[green]pass[/]"
        else:
            # Within the bound, but LoadGen or the stability rule could not judge it.
            verdict = f"[yellow]within bound, not judged[/]: {', '.join(probe.shortfalls())}"
        rows.append(
            [
                f"{probe.qps:.1f}",
                f"{probe.completed_qps:.1f}",
                "-" if math.isnan(probe.latency_ms) else f"{probe.latency_ms:.2f}",
                verdict,
                probe.validity,
                probe.stability,
                probe.run_id[:RUN_ID_PREFIX],
            ]
        )
    return fitted_table(
        columns,
        rows,
        width=width,
        title=f"find-peak: {pct} <= {result.latency_bound_ms:g} ms (probes in the order run)",
        title_justify="left",
    )


@takes_run_options
def find_peak_command(
    model: str = MODEL,
    latency_bound_ms: float = typer.Option(..., help="The latency bound, ms."),
    percentile: float = typer.Option(99.0, help="50, 90, 95, 97, 99 or 99.9."),
    start_qps: float | None = typer.Option(
        None, help="First rate to probe; default: a short Offline run's throughput."
    ),
    tolerance: float = typer.Option(0.05, help="Stop when the bracket is this narrow."),
    max_probes: int = typer.Option(12, min=2, help="At most this many Server runs."),
    duration: float | None = typer.Option(
        None,
        help="Seconds per probe; default: sized from each probe's rate and the percentile "
        "(LoadGen's early stopping: 662 queries at p99).",
    ),
    batch_size: int = typer.Option(1, "--batch-size", "-b", min=1, help="Dynamic batch cap."),
    *,
    run_options: dict[str, Any],
) -> None:
    """Bisect Server QPS with short LoadGen runs; print the peak and the curve that found it.

    A peak is only reported from a probe LoadGen calls VALID and the stability rule could
    judge; otherwise "no valid peak", why, and the settings that would give one (exit 1)."""
    # The latency bound is the search's, not a Server setting of each probe.
    options = BenchOptions.from_params(
        locals() | run_options, leave_out=("latency_bound_ms",), scenario="server"
    )
    request, run_with = options.runner()
    with user_errors(), ProgressBars(Console(stderr=True)) as hooks:
        result, estimate = find_peak(
            request,
            run_with(hooks),
            SearchSettings(latency_bound_ms, percentile, tolerance, max_probes, start_qps),
            warn=lambda line: Console(stderr=True).print(
                f"[yellow]warning:[/] {line}", soft_wrap=True
            ),
        )
    if run_options["as_json"]:
        estimate_run = load_loadgen_report(estimate).run_id if estimate else None
        payload = result.to_dict() | {"estimate_run": estimate_run}
        sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")
        if result.peak is None:
            raise typer.Exit(code=1)
        return
    console = output_console()  # piped: nothing cut
    if estimate is not None:
        offline = load_loadgen_report(estimate)
        console.print(
            f"start rate from Offline run {offline.run_id[:8]}: "
            f"{offline.perf.samples_per_second:.1f} samples/s ({offline.validity})"
        )
    console.print(peak_table(result, console.width))
    console.print(conclusion(result), soft_wrap=True)
    if result.reason:
        console.print(f"[yellow]why:[/] {result.reason}", soft_wrap=True)
    for advice in result.advice:
        console.print(f"  try {advice}", soft_wrap=True)
    if result.peak is None:
        raise typer.Exit(code=1)


def conclusion(result: PeakResult) -> str:
    """One line: the valid peak, or "no valid peak"; the same facts as --json's."""
    if result.peak is None:
        return "[red]no valid peak[/]"
    peak = result.peak
    line = (
        f"peak: [bold]{peak.qps:.1f} QPS[/] with p{result.percentile:g} "
        f"{peak.latency_ms:.2f} ms <= {result.latency_bound_ms:g} ms "
        f"({peak.validity}, stability {peak.stability})"
    )
    low, high = result.bracket
    if peak.qps != low:
        return line  # the bracket is about probes above the peak; ``reason`` says which
    if math.isinf(high):
        return line + " and at least that: no failing rate within --max-probes"
    return line + f"; fails at {high:.1f} (bracket {(high - low) / high:.1%} wide)"


def register(app: typer.Typer) -> None:
    app.command("find-peak")(find_peak_command)
