"""`benchstack bricks generate|run|construct`: DLBricks on this machine
(services/workloads/bricks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from services.cli.errors import user_errors

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
    with user_errors():
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
    suite: Path = typer.Argument(Path("bricks-suite"), help="The suite folder."),
    queries: int = QUERIES,
    min_duration: float = DURATION,
    threads: int = THREADS,
) -> None:
    """Measure each brick this system has no figure for (LoadGen SingleStream), holding
    the host as `bench` does, and keep the host's load with the figures. Ctrl-C stops once
    the LoadGen run in progress ends: the bricks measured so far are kept, exit 130."""
    from services.cli.bricks_run import measure_suite

    measure_suite(suite, queries, min_duration, threads)


@app.command("construct")
def construct(
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
    with user_errors():
        from services.workloads.bricks.measure import MeasureSettings

        settings = MeasureSettings(queries, min_duration, threads)
        systems, built, recipes = _construct_all(models, suite, threads)
        measured = {}
        if measure:
            for spec, recipe, construction in zip(models, recipes, built, strict=True):
                if not construction.missing:
                    measured[construction.model] = _measure(
                        spec, recipe, batch_size, image_size, settings
                    )
    _print_constructions(built, measured, ", ".join(systems), suite)


@app.command("calibrate")
def calibrate(
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
    with user_errors():
        from services.workloads.bricks.construct import fit_brick_cost
        from services.workloads.bricks.measure import MeasureSettings
        from services.workloads.bricks.results import write_results

        settings = MeasureSettings(queries, min_duration, threads)
        systems, built, recipes = _construct_all(models, suite, threads)
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
            _measure(m, r, batch_size, image_size, settings)
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


def _construct_all(
    models: list[str], suite: Path, threads: int
) -> tuple[dict[str, Any], list[Any], list[dict[str, Any]]]:
    """This system's brick timings for each framework the models' recipes use (by system
    key), each model's construction from its recipe, and the recipes."""
    from services.workloads.bricks.construct import construct
    from services.workloads.bricks.measure import system_key
    from services.workloads.bricks.models import find_recipe
    from services.workloads.bricks.results import read_results

    systems: dict[str, Any] = {}
    built = []
    recipes = []
    for model in models:
        recipe = find_recipe(suite, model)
        system = system_key(threads, recipe.get("framework", "torch"))
        results = systems.setdefault(system, read_results(suite, system))
        built.append(construct(recipe, results))
        recipes.append(recipe)
    return systems, built, recipes


def _measure(
    spec: str, recipe: dict[str, Any], batch_size: int, image_size: int | None, settings: Any
) -> float:
    """The model's own median latency, end to end. A torch model (a catalogue name, a
    manifest, an architecture) is measured as `benchstack bench` measures it (run_bench:
    the host slot, its backend, LoadGen SingleStream, the run stored); an ONNX model,
    which `bench` runs only from a manifest, through an onnxruntime session in the
    bricks' harness, as its bricks. A bare name is built as the recipe says it was given
    to generate (googlenet: torchvision:googlenet)."""
    from services.embedded.whole_model import bench_manifest, measure_whole
    from services.workloads.bricks.measure import time_module
    from services.workloads.bricks.models import (
        is_model_file_or_architecture,
        is_onnx_file,
        measurable,
        model_source,
    )
    from shared.settings import get_settings

    if not is_model_file_or_architecture(spec) and recipe.get("spec"):
        spec = str(recipe["spec"])
    if recipe.get("framework", "torch") == "torch" and not is_onnx_file(spec):
        import dataclasses

        import torch

        manifest = bench_manifest(spec, image_size)
        _check_shape(recipe, [batch_size, *manifest.inputs[0].shape])
        # The bricks' figures are keyed by the threads they ran with (no --threads: torch's
        # default count, measure.system_key); the model runs with that count too, not the
        # one `bench` would choose for the host's load, or the two sides differ in threads.
        same = dataclasses.replace(settings, threads=settings.threads or torch.get_num_threads())
        return measure_whole(manifest, same, get_settings(), batch_size).median_ms
    model = model_source(spec, batch_size=batch_size, image_size=image_size)
    module, inputs = measurable(model, settings.threads)
    return time_module(module, inputs, settings).median_ms


def _check_shape(recipe: dict[str, Any], shape: list[int]) -> None:
    """Bricks cut at one shape say nothing of the model at another."""
    if shape != list(recipe["input_shape"]):
        raise ValueError(
            f"batch-size/image-size: {recipe['model']} would be measured at input {shape}, "
            f"but its bricks were cut at {recipe['input_shape']}; accepted: the options "
            "given to `bricks generate`"
        )


LEGEND = (
    "seq: sum of the bricks; crit: critical path; floor: seq less each brick's share of the "
    "harness; cold: seq plus the weights read from memory; calib: seq plus the fitted "
    "per-brick cost"
)
CONSTRUCTIONS = (
    ("seq", "sequential_ms"),
    ("floor", "floor_corrected_ms"),
    ("cold", "cold_weights_ms"),
    ("calib", "calibrated_ms"),
)


def _table(title: str, columns: list[str], caption: str | None = None) -> Table:
    table = Table(title=title, caption=caption)
    for column in columns:
        # Folded, never cut with an ellipsis: a figure is read whole or not at all.
        table.add_column(column, justify="left" if column == "model" else "right", overflow="fold")
    return table


def _print_constructions(
    built: list[Any], measured: dict[str, float], system: str, suite: Path
) -> None:
    """Two tables, each within 80 columns: the constructions, then (with --measure) each
    construction over the measured latency. Every model is named: with a missing figure
    or one at or below zero, and the summary says over which models it is taken."""
    from services.workloads.bricks.construct import FIGURES, summarise

    console = Console()
    latency = _table(
        f"Constructed latency (ms) on {system}",
        ["model", "bricks", "unique", "seq", "crit", "floor", "cold", "calib"],
        LEGEND,
    )
    versus = _table(
        "Constructed / measured", ["model", "measured ms", *(key for key, _ in CONSTRUCTIONS)]
    )
    ratios: dict[str, dict[str, float | None]] = {key: {} for key, _ in CONSTRUCTIONS}
    absent: dict[str, dict[str, str]] = {key: {} for key, _ in CONSTRUCTIONS}
    notes = []
    for c in built:
        if c.missing:
            notes.append(
                f"{c.model}: {len(c.missing)} of {c.unique_bricks} brick(s) not measured on "
                f"this system; run `benchstack bricks run {suite}`"
            )
        else:
            notes.append(
                f"{c.model}: all {c.unique_bricks} brick(s) already measured on this system; "
                "no new brick ran"
            )
            latency.add_row(
                c.model,
                str(c.steps),
                str(c.unique_bricks),
                _ms(c.sequential_ms),
                _ms(c.critical_path_ms),
                _ms(c.floor_corrected_ms),
                _ms(c.cold_weights_ms),
                _ms(c.calibrated_ms),
            )
        for figure in c.non_positive():
            notes.append(
                f"{c.model}: the {FIGURES[figure]} construction is "
                f"{getattr(c, figure):.3f} ms, not above zero: it does not fit this model "
                "and is left out of every mean"
            )
        if c.model not in measured:
            continue
        m = measured[c.model]
        row = [c.model, _ms(m)]
        for key, attribute in CONSTRUCTIONS:
            value = getattr(c, attribute)
            ratios[key][c.model] = value / m if value is not None else None
            absent[key][c.model] = c.why_absent(attribute) or "no figure"
            row.append(_ms(ratios[key][c.model]))
        versus.add_row(*row)
    for table in (latency, versus):
        if table.row_count:
            console.print(table)
    for note in notes:
        console.print(note, soft_wrap=True)  # commands and paths stay on one line
    if len(measured) > 1:
        console.print("Geometric mean of constructed / measured:")
        for key, _ in CONSTRUCTIONS:
            console.print(
                f"  {key}: {summarise(ratios[key], absent[key]).describe()}", soft_wrap=True
            )


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="bricks")
