"""`benchstack profile MODEL --trace-level framework`: why is it slow, layer by layer."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from services.cli.bench_options import DEVICE, FRAMEWORK, MODEL, OPTION, SEED, parse_options
from services.cli.errors import fail, user_errors
from services.cli.profile_render import print_profile
from services.cli.render import output_console
from services.embedded.profile import ProfileRequest, run_profile
from services.inference.backend_interface import BackendOptions
from services.inference.profiling.levels import TraceLevelError, parse_trace_level
from services.inference.profiling.passes import DEFAULT_ITERATIONS
from shared.settings import get_settings


def profile(
    model: str = MODEL,
    trace_level: str = typer.Option(
        "FRAMEWORK",
        "--trace-level",
        "-l",
        help="NONE | MODEL | FRAMEWORK | LIBRARY | SYSTEM | FULL (each level a pass of its own).",
    ),
    framework: str | None = FRAMEWORK,
    batch_size: int = typer.Option(1, "--batch-size", "-b", min=1),
    iterations: int = typer.Option(DEFAULT_ITERATIONS, min=1, help="Iterations of each pass."),
    top: int = typer.Option(10, min=1, help="Layers and library calls to list."),
    trace: Path = typer.Option(
        Path("trace.json"), "--trace", help="Where to write the Chrome/Perfetto trace JSON."
    ),
    seed: int = SEED,
    device: str = DEVICE,
    threads: int = typer.Option(0, help="Intra-op threads (0: chosen for the free CPUs)."),
    option: list[str] = OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout."),
) -> None:
    """Profile a model across the stack: per-layer table, time by operator type, coverage,
    cold vs warm, and a trace file (embedded mode; nothing is stored)."""
    try:
        level = parse_trace_level(trace_level, field="--trace-level")
    except TraceLevelError as exc:
        fail([str(exc)])
    with user_errors():
        request = ProfileRequest(
            model=model,
            trace_level=level,
            framework=framework,
            batch_size=batch_size,
            iterations=iterations,
            seed=seed,
            backend_options=BackendOptions(
                device=device, intra_op_threads=threads, extra=parse_options(option)
            ),
            trace_path=trace,
        )
        outcome = run_profile(request, get_settings())
    if as_json:
        payload = {"profile": outcome.summary, "trace": str(outcome.trace_path)}
        sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")
        return
    console = output_console()
    backend = outcome.backend
    console.print(
        f"{model} on {backend.get('name')} {backend.get('version')} ({backend.get('device')}), "
        f"batch {batch_size}, {iterations} iterations per pass"
    )
    print_profile(console, outcome.summary, trace_file=str(outcome.trace_path), top_n=top)


def register(app: typer.Typer) -> None:
    app.command("profile")(profile)
