"""`benchstack scale-training MODEL --world-sizes 1,2`: the training scaling campaign on
this machine, each world size's ranks as local processes, every rank stored as a run
with the same group record as ``submitTrainingScaling`` stores across agents."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

import typer
from rich.console import Console
from rich.table import Table

from services.campaigns.training_scaling import run_training_scaling
from services.cli.bench_options import AS_JSON, DEVICE
from services.cli.errors import user_errors
from services.core.request import RunRequest
from services.core.stored_report import load_report
from shared.settings import get_settings


def _sizes(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"--world-sizes: {text!r}; give ranks per point, e.g. 1,2") from None


def scale_training(
    model: str = typer.Argument(..., help="A catalogue model built from a torch architecture."),
    world_sizes: str = typer.Option("1,2", help="Ranks per point, e.g. 1,2,4."),
    batch_size: int = typer.Option(1, help="Per rank (weak scaling)."),
    steps: int = typer.Option(20, help="Timed steps per rank."),
    warmup: int = typer.Option(3, help="Untimed steps first."),
    image_size: int = typer.Option(224, help="Synthetic images' side."),
    device: str = DEVICE,
    as_json: bool = AS_JSON,
) -> None:
    """Data-parallel training scaling here: speedup and efficiency E(N) per world size."""
    options = {"steps": steps, "warmup": warmup, "image_size": image_size}
    request = RunRequest(
        model=model,
        framework="torch",
        device=device,
        batch_size=batch_size,
        workloads=(("training", options),),
    )
    with user_errors():
        reports, points = run_training_scaling(request, _sizes(world_sizes), get_settings())
    if as_json:
        group = (load_report(reports[0]).group or {}).get("id") if reports else None
        found = {"group_id": group, "points": [asdict(p) for p in points]}
        sys.stdout.write(json.dumps(found, indent=2) + "\n")
        return
    table = Table(title=f"{model}: training scaling", title_justify="left")
    for column in ("ranks", "images/s", "± se", "speedup", "E(N)", "weights agree"):
        table.add_column(column, justify="right")
    for p in points:
        cells = (p.images_per_second, p.standard_error, p.speedup, p.efficiency)
        shown = ["-" if value is None else f"{value:.2f}" for value in cells]
        table.add_row(str(p.world_size), *shown, str(p.weights_agree))
    Console().print(table)


def register(app: typer.Typer) -> None:
    app.command("scale-training")(scale_training)
