"""`benchstack generative-find-peak` and `benchstack generative-sweep`: the generative
campaigns (find_peak.py, sweep.py) run in this process on one loaded engine, printed at 80
columns or as JSON. Registered by cli.py's ``register``; the run options are cli_options.py's."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import typer

from services.core.campaigns.find_peak import PROBE
from services.core.workload import CommandKit
from services.workloads.generative.cli_options import (
    API,
    AS_JSON,
    BATCH_SIZE,
    BOUNDS,
    DEVICE,
    ENGINE,
    INPUT_TOKENS,
    MODEL,
    OUTPUT_TOKENS,
    PERCENTILE,
    PROMPTS,
    SEED,
    SERVED_MODEL,
    THREADS,
    TIMEOUT,
    TPOT_MS,
    TTFT_MS,
    URL,
    WORKERS,
)

Measure = Callable[[Any], dict[str, Any]]

PROBE_DURATION = typer.Option(
    None, "--duration", help="Every probe's seconds (default: sized from its rate)."
)
START_QPS = typer.Option(None, help="First rate to probe (default: an Offline run's).")
TOLERANCE = typer.Option(0.1, help="Stop when the bracket is this narrow (relative).")
MAX_PROBES = typer.Option(12, min=2, help="At most this many Server runs.")
SCENARIO = typer.Option("server", "--scenario", "-s", help="server|offline|single-stream")
PARAMETER = typer.Option(..., "--parameter", help="target_qps, workers or batch_size.")
VALUES = typer.Option(..., "--values", help="Comma-separated, e.g. 2,4,8.")
DURATION = typer.Option(2.0, "--duration", help="Each run's LoadGen min duration, seconds.")
TARGET_QPS = typer.Option(None, help="Server rate when another setting is swept.")


@contextmanager
def _measure(options: Any, threads: int, reload: bool = False) -> Iterator[Measure]:
    """Runs on one engine loaded once (``reload``: each run loads its own, for a setting
    the engine is loaded with)."""
    from services.workloads.generative.run import load_engine, measure_generation, measure_loaded

    if reload:
        yield lambda run: measure_generation(run, threads=threads)
        return
    if threads:
        import torch

        torch.set_num_threads(threads)
    engine, tokenizer = load_engine(options)
    try:
        yield lambda run: measure_loaded(engine, tokenizer, run, threads=threads)
    finally:
        engine.close()


def _warn(line: str) -> None:
    typer.echo(f"warning: {line}", err=True)


def _starting(run: Any) -> None:
    """One line on stderr before each run: a search's probes may take minutes."""
    options = run.options
    what = (
        f"probe at {options.target_qps:.3g} requests/s"
        if run.group["role"] == PROBE
        else "Offline capacity estimate"
    )
    typer.echo(f"{what} for {options.min_duration_s:.3g} s", err=True)


def _options(**given: Any) -> Any:
    from services.workloads.generative.options import GenerativeOptions

    return GenerativeOptions(**{k: v for k, v in given.items() if v is not None})


def generative_find_peak(
    ctx: typer.Context,
    model: str = MODEL,
    engine: str = ENGINE,
    url: str | None = URL,
    api: str = API,
    served_model: str | None = SERVED_MODEL,
    timeout: float = TIMEOUT,
    prompts: int = PROMPTS,
    input_tokens: str = INPUT_TOKENS,
    output_tokens: str = OUTPUT_TOKENS,
    bounds: str | None = BOUNDS,
    ttft_ms: float | None = TTFT_MS,
    tpot_ms: float | None = TPOT_MS,
    percentile: float | None = PERCENTILE,
    duration: float | None = PROBE_DURATION,
    start_qps: float | None = START_QPS,
    tolerance: float = TOLERANCE,
    max_probes: int = MAX_PROBES,
    batch_size: int = BATCH_SIZE,
    workers: int = WORKERS,
    threads: int = THREADS,
    seed: int = SEED,
    device: str = DEVICE,
    as_json: bool = AS_JSON,
) -> None:
    """The highest Server rate whose TTFT and TPOT meet the bounds, judged VALID."""
    from services.workloads.generative.campaign_render import print_peak
    from services.workloads.generative.find_peak import GenerativeSearch, checked_bounds, find_peak

    kit = CommandKit.of(ctx)
    with kit.user_errors():
        base = _options(
            model=model, engine=engine, url=url, api=api, served_model=served_model,
            timeout_s=timeout, scenario="server", prompts=prompts, input_tokens=input_tokens,
            output_tokens=output_tokens, bounds=bounds, ttft_ms=ttft_ms, tpot_ms=tpot_ms,
            percentile=percentile, min_duration_s=duration, batch_size=batch_size,
            workers=workers, seed=seed, device=device,
        )  # fmt: skip
        search = GenerativeSearch(
            tolerance=tolerance, max_probes=max_probes, start_qps=start_qps, duration_s=duration
        )
        checked_bounds(base, search)  # refused before the model loads
        with _measure(base, threads) as measure:
            result, documents = find_peak(base, search, measure, _warn, _starting)
    if as_json:
        sys.stdout.write(json.dumps({"result": result.to_dict(), "runs": documents}) + "\n")
    else:
        print_peak(kit.output_console(), result, documents)
    if result.peak is None:
        raise typer.Exit(code=1)


def generative_sweep(
    ctx: typer.Context,
    model: str = MODEL,
    engine: str = ENGINE,
    url: str | None = URL,
    api: str = API,
    served_model: str | None = SERVED_MODEL,
    timeout: float = TIMEOUT,
    scenario: str = SCENARIO,
    parameter: str = PARAMETER,
    values: str = VALUES,
    prompts: int = PROMPTS,
    input_tokens: str = INPUT_TOKENS,
    output_tokens: str = OUTPUT_TOKENS,
    target_qps: float | None = TARGET_QPS,
    bounds: str | None = BOUNDS,
    ttft_ms: float | None = TTFT_MS,
    tpot_ms: float | None = TPOT_MS,
    percentile: float | None = PERCENTILE,
    duration: float = DURATION,
    batch_size: int = BATCH_SIZE,
    workers: int = WORKERS,
    threads: int = THREADS,
    seed: int = SEED,
    device: str = DEVICE,
    as_json: bool = AS_JSON,
) -> None:
    """One run per value of a setting: output tokens/s, TTFT and TPOT, LoadGen's verdict."""
    from services.workloads.generative.campaign_render import print_sweep
    from services.workloads.generative.sweep import plan, sweep

    kit = CommandKit.of(ctx)
    with kit.user_errors():
        try:
            numbers = [float(v) for v in values.split(",") if v.strip()]
        except ValueError:
            message = f"--values: {values!r}; accepted: numbers separated by commas"
            raise ValueError(message) from None
        base = _options(
            model=model, engine=engine, url=url, api=api, served_model=served_model,
            timeout_s=timeout, scenario=scenario, prompts=prompts, input_tokens=input_tokens,
            output_tokens=output_tokens, target_qps=target_qps, bounds=bounds, ttft_ms=ttft_ms,
            tpot_ms=tpot_ms, percentile=percentile, min_duration_s=duration,
            batch_size=batch_size, workers=workers, seed=seed, device=device,
        )  # fmt: skip
        fields = ("--parameter", "--values")
        plan(base, parameter, numbers, fields=fields)  # refused before the model loads
        with _measure(base, threads, reload=parameter == "batch_size") as measure:
            curve, documents = sweep(base, parameter, numbers, measure, fields=fields)
    if as_json:
        sys.stdout.write(json.dumps({"curve": curve.to_dict(), "runs": documents}) + "\n")
    else:
        print_sweep(kit.output_console(), curve)
    if any(point.failed_requests for point in curve.points):
        raise typer.Exit(code=1)


def register(root: typer.Typer) -> None:
    root.command("generative-find-peak")(generative_find_peak)
    root.command("generative-sweep")(generative_sweep)
