"""`benchstack bricks generate|run|construct|calibrate` (the bricks workload's command):
DLBricks on this machine."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from services.core.workload import CommandKit
from services.workloads.bricks.cli_construct import construct_all, measure_model
from services.workloads.bricks.cli_tables import print_constructions

app = typer.Typer(
    help="DLBricks: benchmark a zoo's unique layer sequences once, construct each model's "
    "latency from them.",
    no_args_is_help=True,
)
SUITE = typer.Option(Path("bricks-suite"), "--suite", "--output", help="The suite folder.")
BATCH = typer.Option(1, "--batch-size", help="Batch the bricks are cut at (1..256).")
IMAGE = typer.Option(
    None, "--image-size", help="Square input side (16..1024); default: the model's."
)
QUERIES = typer.Option(50, "--queries", help="LoadGen SingleStream min query count per brick.")
DURATION = typer.Option(0.05, "--min-duration", help="LoadGen min duration per brick, seconds.")
THREADS = typer.Option(
    0, "--threads", help="torch / onnxruntime intra-op threads; 0: the framework's default."
)


@app.command("generate")
def generate(
    ctx: typer.Context,
    models: list[str] = typer.Argument(
        ...,
        help="Catalogue names, manifest files, architectures (torchvision:resnet34) or "
        "ONNX files (model.onnx; its symbolic batch dimension set by --batch-size).",
    ),
    granularity: int = typer.Option(1, "--granularity", "-H", help="Layers per brick (1..64)."),
    suite: Path = SUITE,
    batch_size: int = BATCH,
    image_size: int | None = IMAGE,
) -> None:
    """Cut MODELS into sequences of at most H layers and write each unique one as a brick."""
    with CommandKit.of(ctx).user_errors():
        from services.workloads.bricks.generate import generate_suite
        from services.workloads.bricks.models import model_source

        inputs = [model_source(m, batch_size=batch_size, image_size=image_size) for m in models]
        report = generate_suite(inputs, granularity, suite)
    console = Console()
    share = report.unique / report.sequences if report.sequences else 0.0
    console.print(
        f"{report.models} model(s), {report.layers} layers, {report.sequences} sequences of "
        f"at most {granularity} layer(s): {report.unique} unique ({share:.1%}); "
        f"{report.new_bricks} new brick(s) written to {suite / 'bricks'}",
        soft_wrap=True,
    )
    if report.pt2_fallbacks:
        console.print(
            f"{len(report.pt2_fallbacks)} of them written with torch.export (.pt2), which the "
            f"torchfx format could not hold; the first: {report.pt2_fallbacks[0]}",
            soft_wrap=True,
        )
    console.print(
        f"Share {suite / 'bricks'} to have the bricks measured; {suite / 'recipes'} holds how "
        "your models are made of them and stays with you.",
        soft_wrap=True,
    )


@app.command("run")
def run(
    ctx: typer.Context,
    suite: Path = typer.Argument(Path("bricks-suite"), help="The suite folder."),
    queries: int = QUERIES,
    min_duration: float = DURATION,
    threads: int = THREADS,
) -> None:
    """Measure each brick this system has no figure for (LoadGen SingleStream), holding
    the host as `bench` does, and keep the host's load with the figures. Ctrl-C stops once
    the LoadGen run in progress ends: the bricks measured so far are kept, exit 130."""
    from services.workloads.bricks.cli_run import measure_suite

    measure_suite(CommandKit.of(ctx), suite, queries, min_duration, threads)


@app.command("construct")
def construct(
    ctx: typer.Context,
    models: list[str] = typer.Argument(..., help="Models with a recipe in the suite."),
    suite: Path = SUITE,
    measure: bool = typer.Option(
        False,
        "--measure",
        help="Also measure each model end to end as `bench` does, for constructed/measured.",
    ),
    batch_size: int = BATCH,
    image_size: int | None = IMAGE,
    queries: int = QUERIES,
    min_duration: float = DURATION,
    threads: int = THREADS,
) -> None:
    """Each model's latency from its bricks' timings on this system (and, with --measure,
    next to its measured end-to-end latency)."""
    kit = CommandKit.of(ctx)
    with kit.user_errors():
        from services.workloads.bricks.measure import MeasureSettings

        settings = MeasureSettings(queries, min_duration, threads)
        systems, built, recipes = construct_all(models, suite, threads)
        measured = {}
        if measure:
            for spec, recipe, construction in zip(models, recipes, built, strict=True):
                if not construction.missing:
                    measured[construction.model] = measure_model(
                        kit, spec, recipe, batch_size, image_size, settings
                    )
    print_constructions(built, measured, ", ".join(systems), suite)


@app.command("calibrate")
def calibrate(
    ctx: typer.Context,
    models: list[str] = typer.Argument(
        ..., help="Models to fit the per-brick cost on; they are not scored with it after."
    ),
    suite: Path = SUITE,
    batch_size: int = BATCH,
    image_size: int | None = IMAGE,
    queries: int = QUERIES,
    min_duration: float = DURATION,
    threads: int = THREADS,
) -> None:
    """Fit a cost per brick (what a brick call pays that the model does not) on MODELS,
    measured end to end on this system, and keep it with the system's brick timings."""
    kit = CommandKit.of(ctx)
    with kit.user_errors():
        from services.workloads.bricks.construct import fit_brick_cost
        from services.workloads.bricks.measure import MeasureSettings
        from services.workloads.bricks.results import write_results

        settings = MeasureSettings(queries, min_duration, threads)
        systems, built, recipes = construct_all(models, suite, threads)
        if len(systems) != 1:
            raise ValueError(
                f"models: {', '.join(models)} are measured on {len(systems)} systems "
                f"({', '.join(systems)}); accepted: models of one framework per calibration"
            )
        (results,) = systems.values()
        unready = [c.model for c in built if c.missing]
        if unready:
            raise ValueError(
                f"calibrate: {', '.join(unready)} not fully measured on this system; "
                f"run `benchstack bricks run {suite}` first"
            )
        measured = [
            measure_model(kit, m, r, batch_size, image_size, settings)
            for m, r in zip(models, recipes, strict=True)
        ]
        brick_ms = [float(t["median_ms"]) for t in results.bricks.values()]
        cost = fit_brick_cost(built, measured, brick_ms)
        results.brick_cost = {
            "ms_per_brick": cost.ms_per_brick,
            "fitted_ms_per_brick": cost.fitted_ms,
            "bounded": cost.bounded,
            "fitted_on": [c.model for c in built],
        }
        write_results(suite, results)
    console = Console()
    console.print(
        f"{results.system}: {cost.ms_per_brick * 1000:+.2f} us per brick, fitted on "
        f"{', '.join(c.model for c in built)} (not scored with it from now on)",
        soft_wrap=True,
    )
    if cost.bounded:
        console.print(
            f"The fit said {cost.fitted_ms * 1000:+.2f} us; held to {cost.bound_ms * 1000:+.2f} "
            "us, minus the fastest brick on this system: no brick can take less than nothing.",
            soft_wrap=True,
        )


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="bricks")
