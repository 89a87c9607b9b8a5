"""`benchstack bench MODEL`: one embedded benchmark, no servers needed."""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from services.analysis.accuracy_performance_pair import run_accuracy_performance_pair
from services.analysis.repeats import run_repeats, summarise
from services.cli.errors import fail, user_errors, validation_lines
from services.cli.render import (
    loadgen_progress_text,
    output_console,
    print_report,
    spread_table,
)
from services.embedded import bench as embedded
from services.embedded.interrupt import EXIT_INTERRUPTED, INTERRUPTED_MESSAGE
from services.inference.backends.base import BackendOptions
from services.inference.loadgen.config import SCENARIOS, ScenarioConfig
from services.inference.loadgen.runner import RunProgress
from shared.settings import get_settings

PROFILES = ("quick", "official")


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


def build_request(
    *,
    model: str,
    framework: str | None,
    scenario: str,
    mode: str = "performance",
    profile: str = "quick",
    batch_size: int = 1,
    dataset: str = "synthetic",
    samples: int | None = 64,
    duration: float | None = None,
    max_duration: float | None = None,
    min_queries: int | None = None,
    max_queries: int | None = None,
    target_qps: float | None = None,
    latency_bound_ms: float | None = None,
    latency_percentile: float | None = None,
    samples_per_query: int = 8,
    seed: int = 0,
    device: str = "cpu",
    threads: int = 0,
    workers: int = 1,
    option: list[str] | None = None,
) -> embedded.BenchRequest:
    """CLI options -> a validated request; bench, sweep and find-peak share it."""
    if scenario not in SCENARIOS:
        fail([f"--scenario: {scenario!r} is not accepted; accepted: {', '.join(SCENARIOS)}"])
    if profile not in PROFILES:
        fail([f"--profile: {profile!r} is not accepted; accepted: {', '.join(PROFILES)}"])
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
    with user_errors():
        backend_options = BackendOptions(
            device=device, intra_op_threads=threads, extra=parse_options(option or [])
        )
    return embedded.BenchRequest(
        model=model,
        framework=framework,
        scenario=config,
        batch_size=batch_size,
        dataset=dataset,
        samples=samples,
        seed=seed,
        backend_options=backend_options,
        workers=workers,
    )


# Options shared by bench, sweep and find-peak, so each reads the same everywhere.
MODEL = typer.Argument(..., help="A catalogue name (see `benchstack models`) or a manifest file.")
FRAMEWORK = typer.Option(
    None,
    "--framework",
    "-f",
    help="Backend; default: the manifest's "
    "(torch, onnxruntime, tensorflow, triton, tensorrt, null).",
)
PROFILE = typer.Option(
    "quick", help="quick (seconds) | official (MLPerf durations and query counts)"
)
DATASET = typer.Option("synthetic", help="'synthetic' or a folder of images.")
SAMPLES = typer.Option(64, help="Samples to prepare and hold in RAM.")
DURATION = typer.Option(None, help="LoadGen min duration, seconds (quick: 5).")
SEED = typer.Option(0, help="Seed for synthetic data and LoadGen's schedules.")
DEVICE = typer.Option("cpu", help="cpu | cuda | cuda:N")
THREADS = typer.Option(0, help="Intra-op threads (0: the framework's default).")
WORKERS = typer.Option(1, min=1, help="SUT worker threads for Offline/Server.")
OPTION = typer.Option([], "--option", "-o", help="Backend option KEY=VALUE, e.g. mode=torchscript.")
AS_JSON = typer.Option(False, "--json", help="Print the result as JSON on stdout.")


def bench(
    model: str = MODEL,
    framework: str | None = FRAMEWORK,
    scenario: str = typer.Option(
        "offline", "--scenario", "-s", help="offline | single-stream | multi-stream | server"
    ),
    mode: str = typer.Option("performance", help="performance | accuracy"),
    profile: str = PROFILE,
    batch_size: int = typer.Option(1, "--batch-size", "-b", min=1),
    dataset: str = DATASET,
    samples: int | None = SAMPLES,
    duration: float | None = DURATION,
    max_duration: float | None = typer.Option(None, help="LoadGen max duration, seconds."),
    min_queries: int | None = typer.Option(None, help="LoadGen min query count."),
    max_queries: int | None = typer.Option(None, help="LoadGen max query count."),
    target_qps: float | None = typer.Option(
        None, help="Server arrival rate / Offline expected QPS."
    ),
    latency_bound_ms: float | None = typer.Option(None, help="Server target latency, ms."),
    latency_percentile: float | None = typer.Option(
        None, help="Percentile the latency bound applies to, e.g. 99."
    ),
    samples_per_query: int = typer.Option(8, help="MultiStream samples per query."),
    seed: int = SEED,
    device: str = DEVICE,
    threads: int = THREADS,
    workers: int = WORKERS,
    option: list[str] = OPTION,
    repeats: int = typer.Option(
        1, min=1, help="Run N times; print min/median/max and CV per figure."
    ),
    submission: bool = typer.Option(
        False,
        "--submission",
        help="An accuracy pass, then a performance pass; both stored, linked.",
    ),
    as_json: bool = AS_JSON,
) -> None:
    """Benchmark a model on this machine under an MLPerf scenario (embedded mode)."""
    if submission and repeats > 1:
        fail(["--submission: runs one accuracy and one performance pass; drop --repeats"])
    if submission and mode != "performance":
        fail(["--mode: --submission runs both modes itself; leave --mode out"])
    request = build_request(
        model=model,
        framework=framework,
        scenario=scenario,
        mode=mode,
        profile=profile,
        batch_size=batch_size,
        dataset=dataset,
        samples=samples,
        duration=duration,
        max_duration=max_duration,
        min_queries=min_queries,
        max_queries=max_queries,
        target_qps=target_qps,
        latency_bound_ms=latency_bound_ms,
        latency_percentile=latency_percentile,
        samples_per_query=samples_per_query,
        seed=seed,
        device=device,
        threads=threads,
        workers=workers,
        option=option,
    )
    settings = get_settings()
    stderr = Console(stderr=True)
    console = output_console()
    try:
        with user_errors(), _progress_bars(stderr) as hooks:
            if submission:
                results = run_accuracy_performance_pair(
                    request, lambda r: embedded.run_bench(r, settings, hooks)
                )
                reports = list(results.values())
            else:
                reports = run_repeats(
                    request, repeats, lambda r: embedded.run_bench(r, settings, hooks)
                )
    except KeyboardInterrupt:
        # Ctrl-C outside the measurement (preparing data, loading, storing); during it,
        # services/embedded/interrupt.py ends the process with the same line and code.
        stderr.print(INTERRUPTED_MESSAGE, highlight=False)
        raise typer.Exit(code=EXIT_INTERRUPTED) from None
    if as_json:
        payload: Any = reports[0]
        if submission:
            payload = results
        elif repeats > 1:
            spreads = {k: v.to_dict() for k, v in summarise(reports).items()}
            payload = {"runs": reports, "spread": spreads}
        sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")
    elif submission:
        for report in reports:
            print_report(console, report)
        console.print(
            f"submission {reports[0]['group']['id']}: accuracy run "
            f"{reports[0]['run_id']}, performance run {reports[1]['run_id']}"
        )
    elif repeats > 1:
        print_report(console, reports[-1])
        console.print(spread_table(reports, summarise(reports)))
    else:
        print_report(console, reports[0])
    # On stderr, so --json stays parseable; the stored report holds the same list.
    for report in reports:
        for warning in (report.get("accuracy") or {}).get("warnings", []):
            stderr.print(f"[yellow]warning:[/] {warning}", soft_wrap=True)
    if any(report["failed_samples"] for report in reports):
        raise typer.Exit(code=1)


class _progress_bars:
    """Progress on stderr: preprocessing, and each LoadGen phase as it runs.

    On a terminal, bars. Otherwise (piped, captured, CI logs) a line when calibration or
    measurement starts and one every PLAIN_EVERY_S, so a long run is never silent.
    """

    PLAIN_EVERY_S = 10.0

    def __init__(self, console: Console) -> None:
        self.console = console
        self.plain = not console.is_terminal
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            # Bars are for people; piped or captured output gets plain lines instead.
            disable=self.plain,
        )
        self.stage: TaskID | None = None
        self.prep: TaskID | None = None
        # LoadGen reports from its own thread (the runner's poller), the stages from this one.
        self._lock = threading.Lock()
        self.phase: str | None = None
        self.phase_task: TaskID | None = None
        self.last_report: RunProgress | None = None
        self._last_line = 0.0
        self._prep_done = 0
        self._prep_total = 0

    def __enter__(self) -> embedded.Progress:
        self.progress.start()
        return embedded.Progress(
            on_stage=self._stage,
            on_preprocess_start=self._prep_start,
            on_preprocess_advance=self._prep_advance,
            on_run_start=self._run_start,
            on_loadgen=self._loadgen,
        )

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._end_phase(finished=False)  # maybe cut short by an error: no "done" line
        if self.stage is not None:
            self.progress.update(self.stage, completed=1, total=1)
        self.progress.stop()

    def _stage(self, name: str) -> None:
        with self._lock:
            self._end_phase()
        if self.stage is not None:
            self.progress.update(self.stage, completed=1, total=1)
        self.stage = self.progress.add_task(name, total=None, detail="")

    def _prep_start(self, total: int) -> None:
        self._prep_done, self._prep_total = 0, total
        self.prep = self.progress.add_task("preprocessing", total=total, detail="")

    def _prep_advance(self, n: int) -> None:
        if self.prep is not None:
            self._prep_done += n
            self.progress.update(
                self.prep,
                completed=self._prep_done,
                detail=f"{self._prep_done}/{self._prep_total} files",
            )

    def _run_start(self, expected_s: float) -> None:
        if self.stage is not None:
            self.progress.update(
                self.stage, description=f"running LoadGen (at least {expected_s:g} s)"
            )

    def _loadgen(self, report: RunProgress) -> None:
        with self._lock:
            if report.phase != self.phase:
                self._end_phase()
                self.phase = report.phase
                self.phase_task = self.progress.add_task(
                    f"  {report.phase}", total=None if report.fraction is None else 1, detail=""
                )
                if report.phase != "warming up":  # seconds at most; its errors stay alone
                    self._say(report)
            assert self.phase_task is not None
            self.progress.update(
                self.phase_task,
                completed=report.fraction or 0,
                detail=loadgen_progress_text(report),
            )
            self.last_report = report
            due = time.monotonic() - self._last_line >= self.PLAIN_EVERY_S
            if due and report.phase != "warming up":
                self._say(report)

    def _end_phase(self, *, finished: bool = True) -> None:
        """The finished phase's bar stays, full; the next phase gets a bar of its own."""
        if self.phase_task is not None:
            if self.phase == "warming up":
                # Untimed and brief: its bar would only lengthen a sweep's screen.
                self.progress.remove_task(self.phase_task)
            else:
                self.progress.update(self.phase_task, completed=1, total=1)
            report = self.last_report
            if finished and self.plain and report is not None and self.phase != "warming up":
                self.console.print(
                    f"{self.phase} done: {loadgen_progress_text(report)}", highlight=False
                )
        self.phase, self.phase_task = None, None

    def _say(self, report: RunProgress) -> None:
        if self.plain:
            self.console.print(f"{report.phase}: {loadgen_progress_text(report)}", highlight=False)
            self._last_line = time.monotonic()


def register(app: typer.Typer) -> None:
    app.command("bench")(bench)
