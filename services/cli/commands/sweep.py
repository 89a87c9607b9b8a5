"""`benchstack sweep MODEL --batch-sizes 1,2,4`: a throughput-versus-latency curve."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from services.campaigns.drive import run_sweep
from services.cli.bench_options import (
    DURATION,
    MODEL,
    PREPROCESSING,
    PROFILE,
    BenchOptions,
)
from services.cli.errors import fail, user_errors
from services.cli.progress import ProgressBars
from services.cli.render import PIPED_WIDTH, output_console
from services.cli.run_options import takes_run_options
from services.cli.tables import RUN_ID_PREFIX, Column, fitted_table
from services.core.campaigns.sweep import Curve, CurvePoint
from shared.settings import get_settings
from shared.storage import make_store


def _ms(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.3f}"


# At a narrow console the swept value, its figures, verdicts and run id stay.
CURVE_COLUMNS = (
    Column("samples/s", priority=90, wrap=False, justify="right"),
    Column("p50 ms", priority=30, wrap=False, justify="right"),
    Column("p90 ms", priority=35, wrap=False, justify="right"),
    Column("p99 ms", priority=60, wrap=False, justify="right"),
    Column("validity", priority=85, wrap=False, justify="right"),
    Column("stability", priority=80, min_width=9, justify="right"),
    Column("model", priority=20, min_width=6, justify="right"),
    Column("run", priority=95, wrap=False),
)


def curve_table(curve: Curve, width: int = PIPED_WIDTH) -> Table:
    label = {"batch_size": "batch", "target_qps": "target QPS", "samples_per_query": "spq"}
    swept = Column(
        label.get(curve.parameter, curve.parameter), priority=100, wrap=False, justify="right"
    )
    loads = curve.model_loads
    captions = [
        f"model loaded {loads} time{'' if loads == 1 else 's'} for {len(curve.points)} runs "
        "(kept: stayed loaded from the run before; loads are never inside a measurement)"
    ]
    if curve.scenario == "offline":
        # LoadGen issues one Offline query; its "latency" is the time to drain the queue.
        captions.append("Offline latency: from the single query's issue to each completion")
    return fitted_table(
        (swept, *CURVE_COLUMNS),
        [_row(point) for point in curve.points],
        width=width,
        title=f"sweep {curve.id} - {curve.model}, {curve.scenario}, over {curve.parameter}",
        title_justify="left",
        caption="\n".join(captions),
    )


def _row(point: CurvePoint) -> list[str]:
    valid = point.validity == "VALID"
    stable = point.stability == "STABLE"
    return [
        f"{point.value:g}",
        f"{point.samples_per_second:.2f}",
        _ms(point.latency_p50_ms),
        _ms(point.latency_p90_ms),
        _ms(point.latency_p99_ms),
        f"[green]{point.validity}[/]" if valid else f"[red]{point.validity}[/]",
        f"[green]{point.stability}[/]" if stable else f"[yellow]{point.stability}[/]",
        "kept" if point.model_kept else _loaded(point.model_load_s),
        point.run_id[:RUN_ID_PREFIX],
    ]


def _loaded(seconds: float | None) -> str:
    return "loaded" if seconds is None else f"loaded {seconds:.2f} s"


def parse_values(text: str, option: str) -> list[float]:
    """'1,2,4' -> [1.0, 2.0, 4.0]; their bounds are the sweep's (core/campaigns/sweep.py)."""
    values: list[float] = []
    for part in text.split(","):
        try:
            values.append(float(part.strip()))
        except ValueError:
            raise ValueError(
                f"{option}: {part.strip()!r} is not a number; accepted: a comma-separated "
                "list such as 1,2,4,8"
            ) from None
    return values


@takes_run_options
def sweep(
    model: str = MODEL,
    batch_sizes: str | None = typer.Option(None, help="Batch sizes, e.g. 1,2,4,8,16."),
    target_qps: str | None = typer.Option(None, help="Server arrival rates, e.g. 50,100,200."),
    samples_per_query: str | None = typer.Option(
        None, help="MultiStream samples per query, e.g. 2,4,8."
    ),
    scenario: str = typer.Option("offline", "--scenario", "-s"),
    batch_size: int = typer.Option(1, "--batch-size", "-b", min=1, help="When not swept."),
    profile: str = PROFILE,
    duration: float | None = DURATION,
    preprocessing: str | None = PREPROCESSING,
    *,
    run_options: dict[str, Any],
) -> None:
    """Run one benchmark per value of one setting; print and store the curve."""
    given = {
        "batch_size": batch_sizes,
        "target_qps": target_qps,
        "samples_per_query": samples_per_query,
    }
    chosen = [(name, text) for name, text in given.items() if text]
    if len(chosen) != 1:
        fail(["sweep: give exactly one of --batch-sizes, --target-qps, --samples-per-query"])
    parameter, text = chosen[0]
    option_name = "--" + parameter.replace("_", "-").replace("batch-size", "batch-sizes")
    # --target-qps and --samples-per-query are here the values swept, not one setting.
    swept = ("target_qps", "samples_per_query")
    request, run_with = BenchOptions.from_params(locals() | run_options, leave_out=swept).runner()
    settings = get_settings()
    console = output_console()
    with user_errors():
        assert text is not None
        values = parse_values(text, option_name)
        with ProgressBars(Console(stderr=True)) as hooks:
            curve = run_sweep(request, parameter, values, run_with(hooks), option_name)
        # The curve itself is stored beside the runs, so it can be shown again as one object.
        stored = json.dumps(curve.to_dict(), indent=2).encode()
        make_store(settings).put_bytes(f"sweeps/{curve.id}.json", stored)
    if run_options["as_json"]:
        sys.stdout.write(json.dumps(curve.to_dict(), indent=2) + "\n")
        return
    console.print(curve_table(curve, console.width))


def register(app: typer.Typer) -> None:
    app.command("sweep")(sweep)
