"""What `benchstack bricks construct` and `calibrate` read and measure: each model's
construction from the suite's recipes and this system's timings, and (with --measure,
and to calibrate) the model's own latency end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.core.workload import CommandKit


def construct_all(
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


def measure_model(
    kit: CommandKit,
    spec: str,
    recipe: dict[str, Any],
    batch_size: int,
    image_size: int | None,
    settings: Any,
) -> float:
    """The model's own median latency, end to end. A torch model (a catalogue name, a
    manifest, an architecture) is measured as `benchstack bench` measures it (run_bench:
    the host slot, its backend, LoadGen SingleStream, the run stored); an ONNX model,
    which `bench` runs only from a manifest, through an onnxruntime session in the
    bricks' harness, as its bricks. A bare name is built as the recipe says it was given
    to generate (googlenet: torchvision:googlenet)."""
    from services.workloads.bricks.formats import brick_format
    from services.workloads.bricks.measure import time_module
    from services.workloads.bricks.models import (
        is_model_file_or_architecture,
        is_onnx_file,
        measurable,
        model_source,
    )
    from services.workloads.bricks.whole_model import bench_manifest, measure_whole
    from shared.settings import get_settings

    if not is_model_file_or_architecture(spec) and recipe.get("spec"):
        spec = str(recipe["spec"])
    through_bench = brick_format(recipe.get("framework", "torch")).whole_through_bench
    if through_bench and not is_onnx_file(spec):
        import dataclasses

        import torch

        manifest = bench_manifest(spec, image_size)
        check_shape(recipe, [batch_size, *manifest.inputs[0].shape])
        # The bricks' figures are keyed by the threads they ran with (no --threads: torch's
        # default count, measure.system_key); the model runs with that count too, not the
        # one `bench` would choose for the host's load, or the two sides differ in threads.
        same = dataclasses.replace(settings, threads=settings.threads or torch.get_num_threads())
        return measure_whole(manifest, same, get_settings(), batch_size, bench=kit.bench).median_ms
    model = model_source(spec, batch_size=batch_size, image_size=image_size)
    module, inputs = measurable(model, settings.threads)
    return time_module(module, inputs, settings).median_ms


def check_shape(recipe: dict[str, Any], shape: list[int]) -> None:
    """Bricks cut at one shape say nothing of the model at another."""
    if shape != list(recipe["input_shape"]):
        raise ValueError(
            f"batch-size/image-size: {recipe['model']} would be measured at input {shape}, "
            f"but its bricks were cut at {recipe['input_shape']}; accepted: the options "
            "given to `bricks generate`"
        )
