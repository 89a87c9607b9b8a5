"""`benchstack bench MODEL`: one embedded benchmark, no servers needed."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer
from rich.console import Console

from services.campaigns.drive import run_pair, run_repeats
from services.cli.bench_options import (
    DURATION,
    MODEL,
    PREPROCESSING,
    PROFILE,
    PROFILE_ITERATIONS,
    TRACE_LEVEL,
    BenchOptions,
)
from services.cli.errors import fail, user_errors
from services.cli.profile_render import print_profile
from services.cli.progress import ProgressBars
from services.cli.render import output_console, print_report
from services.cli.run_options import takes_run_options
from services.cli.spread_render import spread_table
from services.core.campaigns.repeats import RepeatsSummary
from services.core.stored_report import load_loadgen_report
from services.embedded.interrupt import EXIT_INTERRUPTED, interrupted_message
from services.inference.profiling.trace_events import TRACE_FILE

# The options only bench has; those it shares with sweep and find-peak are in bench_options.
SCENARIO = typer.Option(
    "offline", "--scenario", "-s", help="offline | single-stream | multi-stream | server"
)
MODE = typer.Option("performance", help="performance | accuracy")
BATCH_SIZE = typer.Option(1, "--batch-size", "-b", min=1)
MAX_DURATION = typer.Option(None, help="LoadGen max duration, seconds.")
MIN_QUERIES = typer.Option(None, help="LoadGen min query count.")
MAX_QUERIES = typer.Option(None, help="LoadGen max query count.")
TARGET_QPS = typer.Option(None, help="Server arrival rate / Offline expected QPS.")
LATENCY_BOUND_MS = typer.Option(None, help="Server target latency, ms.")
LATENCY_PERCENTILE = typer.Option(None, help="Percentile the latency bound applies to, e.g. 99.")
SAMPLES_PER_QUERY = typer.Option(8, help="MultiStream samples per query.")
REPEATS = typer.Option(
    1, min=1, help="Run N times (2..20); print min/median/max and CV per figure."
)
# `submit` spells it --min-duration: both spellings work in both commands.
DURATION_OR_MIN = typer.Option(None, "--duration", "--min-duration", help=DURATION.help)
SUBMISSION = typer.Option(
    False,
    "--submission",
    help="An accuracy pass, then a performance pass; both stored, linked.",
)


@takes_run_options
def bench(
    model: str = MODEL,
    scenario: str = SCENARIO,
    mode: str = MODE,
    profile: str = PROFILE,
    batch_size: int = BATCH_SIZE,
    duration: float | None = DURATION_OR_MIN,
    max_duration: float | None = MAX_DURATION,
    min_queries: int | None = MIN_QUERIES,
    max_queries: int | None = MAX_QUERIES,
    target_qps: float | None = TARGET_QPS,
    latency_bound_ms: float | None = LATENCY_BOUND_MS,
    latency_percentile: float | None = LATENCY_PERCENTILE,
    samples_per_query: int = SAMPLES_PER_QUERY,
    repeats: int = REPEATS,
    submission: bool = SUBMISSION,
    trace_level: str = TRACE_LEVEL,
    profile_iterations: int = PROFILE_ITERATIONS,
    preprocessing: str | None = PREPROCESSING,
    *,
    run_options: dict[str, Any],
) -> None:
    """Benchmark a model on this machine under an MLPerf scenario (embedded mode)."""
    if submission and repeats > 1:
        fail(["--submission: runs one accuracy and one performance pass; drop --repeats"])
    options = BenchOptions.from_params(locals() | run_options)
    stderr = Console(stderr=True)
    results, summary = _run(options, stderr, submission=submission, repeats=repeats)
    reports = list(results.values()) if isinstance(results, dict) else results
    try:
        if run_options["as_json"]:
            _write_json(results, reports, summary)
        else:
            _print_reports(reports, submission=submission, summary=summary)
    except KeyboardInterrupt:
        # The runs are stored; only their printing was cut short.
        stderr.print(interrupted_message(), highlight=False)
        raise typer.Exit(code=EXIT_INTERRUPTED) from None
    # On stderr, so --json stays parseable; the stored report holds the same list.
    typed = [load_loadgen_report(r) for r in reports]
    for report in typed:
        for warning in report.accuracy.warnings if report.accuracy else []:
            stderr.print(f"[yellow]warning:[/] {warning}", soft_wrap=True)
    if any(report.failed_samples for report in typed):
        raise typer.Exit(code=1)


def _run(
    options: BenchOptions, stderr: Console, *, submission: bool, repeats: int
) -> tuple[dict[str, dict[str, Any]] | list[dict[str, Any]], RepeatsSummary | None]:
    """The reports of the runs asked for (a submission's by mode, else one per repeat)
    and the repeats' summary (None for one run or a submission)."""
    request, run_with = options.runner()
    try:
        with user_errors(), ProgressBars(stderr) as hooks:
            run = run_with(hooks)
            if submission:
                # --mode's default is performance: given otherwise, the pair refuses it.
                mode_given = options.mode != "performance"
                passes, _ = run_pair(request, run, mode_given=mode_given)
                return passes, None
            return run_repeats(request, repeats, run)
    except KeyboardInterrupt:
        # Ctrl-C outside the measurement and the storing (preparing data, loading); during
        # them, services/embedded/interrupt.py ends the process with the same words and code.
        stderr.print(interrupted_message(), highlight=False)
        raise typer.Exit(code=EXIT_INTERRUPTED) from None


def _write_json(
    results: dict[str, dict[str, Any]] | list[dict[str, Any]],
    reports: list[dict[str, Any]],
    summary: RepeatsSummary | None,
) -> None:
    payload: Any = reports[0]
    if isinstance(results, dict):  # a submission: the reports by mode
        payload = results
    elif len(reports) > 1:
        payload = {
            "runs": reports,
            "spread": {k: v.to_dict() for k, v in (summary.spread if summary else {}).items()},
            "confidence": summary.confidence.to_dict() if summary else None,
        }
    sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")


def _print_reports(
    reports: list[dict[str, Any]], *, submission: bool, summary: RepeatsSummary | None
) -> None:
    console = output_console()
    if submission:
        for report in reports:
            print_report(console, report)
        console.print(
            f"submission {reports[0]['group']['id']}: accuracy run "
            f"{reports[0]['run_id']}, performance run {reports[1]['run_id']}"
        )
    elif summary is not None:
        print_report(console, reports[-1])
        console.print(spread_table(reports, summary.spread, summary.confidence.to_dict()))
    else:
        print_report(console, reports[0])
    for run in map(load_loadgen_report, reports):
        if run.profile:
            print_profile(console, run.profile, trace_file=run.logs.get(TRACE_FILE))


def register(app: typer.Typer) -> None:
    app.command("bench")(bench)
