"""`benchstack bench MODEL`: one embedded benchmark, no servers needed."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from services.cli.errors import fail, user_errors, validation_lines
from services.cli.render import print_report
from services.embedded import bench as embedded
from services.inference.backends.base import BackendOptions
from services.inference.loadgen.config import SCENARIOS, ScenarioConfig
from shared.settings import get_settings


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """KEY=VALUE pairs for backend options; numbers become numbers."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail([f"--option: {pair!r} must look like KEY=VALUE, e.g. mode=torchscript"])
        parsed: Any = value
        for kind in (int, float):
            try:
                parsed = kind(value)
                break
            except ValueError:
                continue
        options[key] = parsed
    return options


def bench(
    model: str = typer.Argument(..., help="A catalogue name (see `benchstack models`) or a manifest file."),
    framework: str | None = typer.Option(None, "--framework", "-f", help="Backend; default: the manifest's (torch, onnxruntime, tensorflow, triton, tensorrt, null)."),
    scenario: str = typer.Option("offline", "--scenario", "-s", help="offline | single-stream | multi-stream | server"),
    mode: str = typer.Option("performance", help="performance | accuracy"),
    profile: str = typer.Option("quick", help="quick (seconds) | official (MLPerf durations)"),
    batch_size: int = typer.Option(1, "--batch-size", "-b", min=1),
    dataset: str = typer.Option("synthetic", help="'synthetic' or a folder of images."),
    samples: int | None = typer.Option(64, help="Samples to prepare and hold in RAM."),
    duration: float | None = typer.Option(None, help="LoadGen min duration, seconds (quick: 5)."),
    max_duration: float | None = typer.Option(None, help="LoadGen max duration, seconds."),
    min_queries: int | None = typer.Option(None, help="LoadGen min query count."),
    max_queries: int | None = typer.Option(None, help="LoadGen max query count."),
    target_qps: float | None = typer.Option(None, help="Server arrival rate / Offline expected QPS."),
    latency_bound_ms: float | None = typer.Option(None, help="Server target latency, ms."),
    latency_percentile: float | None = typer.Option(None, help="Percentile the latency bound applies to, e.g. 99."),
    samples_per_query: int = typer.Option(8, help="MultiStream samples per query."),
    seed: int = typer.Option(0, help="Seed for synthetic data and LoadGen's schedules."),
    device: str = typer.Option("cpu", help="cpu | cuda | cuda:N"),
    threads: int = typer.Option(0, help="Intra-op threads (0: the framework's default)."),
    workers: int = typer.Option(1, help="SUT worker threads for Offline/Server."),
    option: list[str] = typer.Option([], "--option", "-o", help="Backend option KEY=VALUE, e.g. mode=torchscript."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout."),
) -> None:
    """Benchmark a model on this machine under an MLPerf scenario (embedded mode)."""
    if scenario not in SCENARIOS:
        fail([f"--scenario: {scenario!r} is not accepted; accepted: {', '.join(SCENARIOS)}"])
    try:
        config = ScenarioConfig(
            scenario=scenario,  # type: ignore[arg-type]
            mode=mode,  # type: ignore[arg-type]
            profile=profile,  # type: ignore[arg-type]
            min_duration_s=duration,
            max_duration_s=max_duration,
            min_query_count=min_queries,
            max_query_count=max_queries,
            target_qps=target_qps,
            target_latency_ms=latency_bound_ms,
            latency_percentile=latency_percentile,
            samples_per_query=samples_per_query,
            qsl_rng_seed=seed or None,
            sample_index_rng_seed=seed or None,
            schedule_rng_seed=seed or None,
        )
    except ValidationError as exc:
        fail(validation_lines(exc))
    request = embedded.BenchRequest(
        model=model,
        framework=framework,
        scenario=config,
        batch_size=batch_size,
        dataset=dataset,
        samples=samples,
        seed=seed,
        backend_options=BackendOptions(
            device=device, intra_op_threads=threads, extra=parse_options(option)
        ),
        workers=workers,
    )
    stderr = Console(stderr=True)
    with user_errors(), _progress_bars(stderr) as hooks:
        report = embedded.run_bench(request, get_settings(), hooks)
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2, default=str) + "\n")
    else:
        print_report(Console(), report)
    if report["failed_samples"]:
        raise typer.Exit(code=1)


class _progress_bars:  # noqa: N801 - used as a context manager, reads like one
    """Progress bars on stderr for preprocessing and the LoadGen run."""

    def __init__(self, console: Console) -> None:
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            # Bars are for people; piped or captured output stays free of them.
            disable=not console.is_terminal,
        )
        self.stage: TaskID | None = None
        self.prep: TaskID | None = None

    def __enter__(self) -> embedded.Progress:
        self.progress.start()
        return embedded.Progress(
            on_stage=self._stage,
            on_preprocess_start=self._prep_start,
            on_preprocess_advance=self._prep_advance,
            on_run_start=self._run_start,
        )

    def __exit__(self, *exc: object) -> None:
        if self.stage is not None:
            self.progress.update(self.stage, completed=1, total=1)
        self.progress.stop()

    def _stage(self, name: str) -> None:
        if self.stage is not None:
            self.progress.update(self.stage, completed=1, total=1)
        self.stage = self.progress.add_task(name, total=None)

    def _prep_start(self, total: int) -> None:
        self.prep = self.progress.add_task("preprocessing", total=total)

    def _prep_advance(self, n: int) -> None:
        if self.prep is not None:
            self.progress.advance(self.prep, n)

    def _run_start(self, expected_s: float) -> None:
        if self.stage is not None:
            self.progress.update(
                self.stage, description=f"running LoadGen (at least {expected_s:g} s)"
            )


def register(app: typer.Typer) -> None:
    app.command("bench")(bench)
