"""How `benchstack train` prints: each step's progress line, each run as it ends, and a
session's medians and comparisons with their verdicts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from services.workloads.training.session import ArmRun, SessionReport
    from services.workloads.training.step_timing import StepLog


def show_step(line: StepLog) -> None:
    """A progress line as tf_cnn_benchmarks prints it, tab-separated (plain text: a rich
    console would expand the tabs)."""
    typer.echo(line.line())


def print_run(out: Console, run: ArmRun, host_text: Callable[[dict[str, Any]], str]) -> None:
    """One run as it ends: its images/s with standard error and jitter, and its host (as
    ``host_text`` words it: the CLI's, CommandKit.host_text)."""
    s, document = run.document["statistics"], run.document
    workers = "" if run.arm.workers is None else f", {document['threads_per_worker']} threads each"
    out.print(
        f"[bold]{escape(run.arm.label)}[/] repeat {run.repeat + 1}{workers}: "
        f"images/s {s['images_per_s']:.1f} ± {s['standard_error_images_per_s']:.1f} "
        f"(jitter {s['jitter_images_per_s']:.1f}; batch / mean step "
        f"{s['mean_step_s'] * 1e3:.1f} ms over {s['steps']} steps), "
        f"data share {s['data_share']:.3f}" + _memory(document)
    )
    if run.arm.workers is not None and len(set(document["weight_digests"])) != 1:
        out.print(f"  {run.arm.workers} workers ended with different weights: not in step")
    out.print(f"  host: {host_text(document['host'])}")


def _memory(document: dict[str, Any]) -> str:
    rss, cuda = document.get("peak_rss_bytes"), document.get("cuda_max_allocated_bytes")
    text = f", peak RSS {rss / 2**20:.0f} MiB" if rss else ""
    return text + (f", CUDA max allocated {cuda / 2**20:.0f} MiB" if cuda else "")


def print_summary(out: Console, report: SessionReport) -> None:
    """Each arm's median with its interval, then each comparison with its verdict."""
    from services.workloads.training.repeats import DIFFER

    if report.repeats > 1:
        for figure in report.figures:
            interval = (
                f"[{figure.low:.1f}, {figure.high:.1f}]"
                if figure.low is not None and figure.high is not None
                else f"(no interval: {figure.reason})"
            )
            out.print(
                f"{escape(figure.arm)}: median images/s {figure.images_per_s:.1f} {interval} "
                f"over {figure.runs} runs"
            )
    for c in report.comparisons:
        name = {"ratio": "images/s", "speedup": "speedup", "efficiency": "E(N)"}[c.figure]
        head = f"{escape(c.b)} / {escape(c.a)}: {name}"
        colour = "bold" if c.verdict == DIFFER else "yellow"
        if c.low is not None and c.high is not None:
            value = f"{c.estimate:.3f} [{c.low:.3f}, {c.high:.3f}]"
        else:
            value = "no interval"  # a ratio is shown with its interval or not at all
        out.print(f"{head} {value}: [{colour}]{c.verdict}[/] ({escape(c.why)})")
    if report.busy_runs:
        out.print(
            f"[bold red]BUSY[/]: {report.busy_runs} of {len(report.runs)} runs measured while "
            "other processes took the CPUs; their figures describe the neighbour too"
        )
