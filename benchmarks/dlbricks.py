"""DLBricks over the catalogue: how unique are the layers, how much faster is benchmarking
the bricks than every model, and how close is the constructed latency to the measured one?

For each granularity H, a fresh suite is generated from every torch model of the
catalogue (``services/workloads/bricks``), every brick is measured once through LoadGen
SingleStream, and every model is measured end to end through the same harness with the
same settings (one LoadGen run over all models, as the bricks get), just before and
just after the bricks: the mean of both is the reference, so drift on the machine between
the phases reaches both sides. Printed per H:
layers, unique sequences (and their share), the seconds spent measuring the bricks vs
measuring every model (the speedup), and per model the constructed / measured ratio for
the sequential sum, the floor-corrected sum and the calibrated sum whose per-brick cost
is fitted leave-one-out (on every model but the one scored) and held to minus the
fastest brick (construct.calibration_bound). The geometric mean of each ratio closes
each H, over the models with a figure above zero; any other model is named. Generation
(tracing and export) is timed apart: it is done once per zoo, not once per system.

    python benchmarks/dlbricks.py [--granularities 1,2,3,4] [--image-size 224]
        [--queries 50] [--min-duration 0.05] [--threads 1] [--models resnet18,...]

Run it alone on the machine: every figure is a latency.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from services.workloads.bricks.construct import construct, fit_brick_cost, summarise
from services.workloads.bricks.generate import BrickError, ModelInput, generate_suite, read_recipe
from services.workloads.bricks.measure import MeasureSettings, Timing, system_key, time_modules
from services.workloads.bricks.models import model_input
from services.workloads.bricks.parse import ParseError
from services.workloads.bricks.results import SystemResults, read_results
from services.workloads.bricks.run import run_framework
from shared.catalogue import list_catalogue


def catalogue_torch_models() -> list[str]:
    return [
        m.name
        for m in list_catalogue()
        if m.framework.name == "torch" and m.source.architecture is not None
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--granularities", default="1,2,3,4")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--min-duration", type=float, default=0.05)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--models", default="", help="comma-separated; default: the catalogue")
    args = parser.parse_args()
    settings = MeasureSettings(args.queries, args.min_duration, args.threads)
    names = [n for n in args.models.split(",") if n] or catalogue_torch_models()
    inputs = [model_input(n, image_size=args.image_size) for n in names]

    print(f"system {system_key(args.threads)}; image {args.image_size}; {settings}")
    before = measure_models(inputs, settings)
    for granularity in (int(h) for h in args.granularities.split(",")):
        with tempfile.TemporaryDirectory(prefix="benchstack-dlbricks-") as folder:
            before = report_granularity(Path(folder), granularity, inputs, before, settings)


def bracketed(before: dict[str, Timing], after: dict[str, Timing]) -> dict[str, Timing]:
    """Each model's timing as the mean of the runs just before and just after the bricks:
    the host's drift between the two phases (this machine's neighbours move latencies by
    tens of per cent over minutes) reaches the bricks and the reference alike."""
    return {
        name: Timing(
            median_ms=(before[name].median_ms + after[name].median_ms) / 2,
            mean_ms=(before[name].mean_ms + after[name].mean_ms) / 2,
            p90_ms=(before[name].p90_ms + after[name].p90_ms) / 2,
            queries=before[name].queries + after[name].queries,
            seconds=(before[name].seconds + after[name].seconds) / 2,
        )
        for name in before
    }


def measure_models(inputs: list[ModelInput], settings: MeasureSettings) -> dict[str, Timing]:
    """Every model end to end in the bricks' harness, one LoadGen run over all of them as
    the bricks get, so both sides of the speedup pay the same set-up."""
    items = [(model.module.eval(), (model.example,)) for model in inputs]
    timings = dict(zip((m.name for m in inputs), time_modules(items, settings), strict=True))
    print(
        "  measured every model: "
        + ", ".join(f"{name} {t.median_ms:.1f} ms" for name, t in timings.items())
        + f" ({sum(t.seconds for t in timings.values()):.1f} s)"
    )
    return timings


def report_granularity(
    suite: Path,
    granularity: int,
    inputs: list[ModelInput],
    before: dict[str, Timing],
    settings: MeasureSettings,
) -> dict[str, Timing]:
    """Generate and measure the suite at ``granularity``, then every model again; score the
    bricks against the models' timings bracketing them. Returns the models' timings after,
    the next granularity's before."""
    usable = []
    start = time.perf_counter()
    for model in inputs:
        try:
            generate_suite([model], granularity, suite)
            usable.append(model)
        except (ParseError, BrickError) as exc:
            print(f"  H={granularity}: {model.name} left out: {exc}")
    generation_s = time.perf_counter() - start
    run = run_framework(suite, settings, "torch")  # the catalogue's models are torch
    after = measure_models(inputs, settings)
    end_to_end = bracketed(before, after)
    results = read_results(suite, run.system)
    recipes = {m.name: read_recipe(suite, m.name) for m in usable}
    layers = sum(r["layers"] for r in recipes.values())
    sequences = sum(len(r["steps"]) for r in recipes.values())
    usable_e2e = sum(end_to_end[m.name].seconds for m in usable)
    measured = {m.name: end_to_end[m.name].median_ms for m in usable}
    print(
        f"\nH={granularity}: {len(usable)} models, {layers} layers, {sequences} sequences, "
        f"{run.bricks} unique ({run.bricks / sequences:.1%}); generation {generation_s:.1f} s"
    )
    drift = sum(after[m.name].seconds for m in usable) / sum(before[m.name].seconds for m in usable)
    print(
        f"  measuring: bricks {run.seconds:.1f} s vs every model {usable_e2e:.1f} s "
        f"(speedup x{usable_e2e / run.seconds:.2f}); every model took x{drift:.3f} as long "
        "after the bricks as before (host drift; the mean of both is the reference)"
    )
    rows = score(recipes, results, measured)
    print(f"  {'model':<20} {'measured':>9} {'seq/meas':>9} {'floor/meas':>11} {'loo/meas':>9}")
    for name, (meas, seq, floor, loo) in rows.items():
        print(f"  {name:<20} {meas:>9.3f} {_ratio(seq):>9} {_ratio(floor):>11} {_ratio(loo):>9}")
    for label, column in (("sequential", 1), ("floor-corrected", 2), ("calibrated LOO", 3)):
        ratios = {name: row[column] for name, row in rows.items()}
        # Every model is counted: one whose figure is missing or not above zero is named.
        summary = summarise(ratios, {name: "no figure" for name in ratios})
        print(f"  geomean {label} / measured: {summary.describe()}")
    return after


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def score(
    recipes: dict[str, dict[str, Any]], results: SystemResults, measured: dict[str, float]
) -> dict[str, tuple[float, float | None, float | None, float | None]]:
    """Per model: measured ms and the three constructed / measured ratios (None where the
    construction has no figure). The calibrated one is fitted on every other model and
    held to calibration_bound, as `bricks calibrate` does."""
    built = {name: construct(recipe, results) for name, recipe in recipes.items()}
    brick_ms = [float(t["median_ms"]) for t in results.bricks.values()]
    rows = {}
    for name, construction in built.items():
        others = [n for n in built if n != name]
        cost = fit_brick_cost([built[n] for n in others], [measured[n] for n in others], brick_ms)
        if cost.bounded:
            print(
                f"  {name}: the fit on the others said {cost.fitted_ms * 1000:+.1f} us per "
                f"brick; held to {cost.bound_ms * 1000:+.1f} us (the fastest brick)"
            )
        fitted = {"ms_per_brick": cost.ms_per_brick, "fitted_on": others}
        loo = construct(recipes[name], replace(results, brick_cost=fitted)).calibrated_ms
        meas = measured[name]
        rows[name] = (
            meas,
            _over(construction.sequential_ms, meas),
            _over(construction.floor_corrected_ms, meas),
            _over(loo, meas),
        )
    return rows


def _over(value: float | None, measured: float) -> float | None:
    return None if value is None else value / measured


if __name__ == "__main__":
    main()
