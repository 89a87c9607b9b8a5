"""The options bench, sweep and find-peak share: one bundle (``BenchOptions``) that makes
the embedded ``BenchRequest``, and the Typer declarations of the options they have in
common, so each reads the same in every command.

A command builds one ``BenchOptions`` from its parameters (``BenchOptions.from_params``); what
it does not offer keeps the default here (sweep has no --mode, find-peak always runs Server).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import typer
from pydantic import ValidationError

from services.cli.errors import fail, user_errors, validation_lines
from services.core.manifest_sections import Fidelity, as_fidelity
from services.core.scenario import SCENARIOS, ScenarioConfig
from services.embedded import bench as embedded
from services.inference.backend_interface import BackendOptions
from services.inference.backends import registry
from services.inference.profiling.levels import TraceLevelError, parse_trace_level
from services.inference.profiling.passes import DEFAULT_ITERATIONS

PROFILES = ("quick", "official")


def parse_fidelity(value: str | None, *, field: str) -> Fidelity | None:
    """A preprocessing mode as typed (any case), or None; anything else exits naming
    ``field``."""
    if value is None:
        return None
    try:
        return as_fidelity(value.lower())
    except ValueError as exc:
        fail([f"{field}: {exc}"])


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


@dataclass(frozen=True)
class BenchOptions:
    """One embedded benchmark as given on the command line, before validation."""

    model: str
    framework: str | None = None
    scenario: str = "offline"
    mode: str = "performance"
    profile: str = "quick"
    batch_size: int = 1
    dataset: str = "synthetic"
    samples: int | None = 64
    duration: float | None = None
    max_duration: float | None = None
    min_queries: int | None = None
    max_queries: int | None = None
    target_qps: float | None = None
    latency_bound_ms: float | None = None
    latency_percentile: float | None = None
    samples_per_query: int = 8
    seed: int = 0
    device: str = "cpu"
    threads: int = 0
    workers: int = 1
    option: list[str] = field(default_factory=list)
    trace_level: str = "NONE"
    profile_iterations: int = DEFAULT_ITERATIONS
    preprocessing: str | None = None

    @classmethod
    def from_params(
        cls, params: Mapping[str, Any], *, leave_out: Collection[str] = (), **fixed: Any
    ) -> BenchOptions:
        """The options among a command's parameters (its ``locals()``): each one named like a
        field, but those in ``leave_out`` (the same name for something else: sweep's list of
        rates, find-peak's latency bound), then ``fixed`` over them (find-peak's scenario)."""
        names = {f.name for f in fields(cls)} - set(leave_out)
        return cls(**({k: v for k, v in params.items() if k in names} | fixed))

    def request(self) -> embedded.BenchRequest:
        """The validated request; a bad option exits with its name and what it accepts."""
        if self.scenario not in SCENARIOS:
            fail(
                [f"--scenario: {self.scenario!r} is not accepted; accepted: {', '.join(SCENARIOS)}"]
            )
        if self.profile not in PROFILES:
            fail([f"--profile: {self.profile!r} is not accepted; accepted: {', '.join(PROFILES)}"])
        preprocessing = parse_fidelity(self.preprocessing, field="--preprocessing")
        try:
            trace_level = parse_trace_level(self.trace_level, field="--trace-level")
        except TraceLevelError as exc:
            fail([str(exc)])
        try:
            config = ScenarioConfig(
                scenario=self.scenario,  # type: ignore[arg-type]
                mode=self.mode,  # type: ignore[arg-type]
                profile=self.profile,  # type: ignore[arg-type]
                min_duration_s=self.duration,
                max_duration_s=self.max_duration,
                min_query_count=self.min_queries,
                max_query_count=self.max_queries,
                target_qps=self.target_qps,
                target_latency_ms=self.latency_bound_ms,
                latency_percentile=self.latency_percentile,
                samples_per_query=self.samples_per_query,
                qsl_rng_seed=self.seed or None,
                sample_index_rng_seed=self.seed or None,
                schedule_rng_seed=self.seed or None,
            )
        except ValidationError as exc:
            fail(validation_lines(exc))
        with user_errors():
            backend_options = BackendOptions(
                device=self.device,
                intra_op_threads=self.threads,
                extra=parse_options(self.option),
            )
        return embedded.BenchRequest(
            model=self.model,
            framework=self.framework,
            scenario=config,
            batch_size=self.batch_size,
            dataset=self.dataset,
            samples=self.samples,
            seed=self.seed,
            backend_options=backend_options,
            workers=self.workers,
            trace_level=trace_level,
            profile_iterations=self.profile_iterations,
            preprocessing=preprocessing,
        )


# Options shared by bench, sweep and find-peak, so each reads the same everywhere.
MODEL = typer.Argument(..., help="A catalogue name (see `benchstack models`) or a manifest file.")
FRAMEWORK = typer.Option(
    None,
    "--framework",
    "-f",
    help=f"Backend; default: the manifest's ({', '.join(registry.backend_names())}).",
)
PROFILE = typer.Option(
    "quick", help="quick (seconds) | official (MLPerf durations and query counts)"
)
DATASET = typer.Option("synthetic", help="'synthetic' or a folder of images.")
SAMPLES = typer.Option(64, help="Samples to prepare and hold in RAM.")
DURATION = typer.Option(None, help="LoadGen min duration, seconds (quick: 5).")
SEED = typer.Option(0, help="Seed for synthetic data and LoadGen's schedules.")
TRACE_LEVEL = typer.Option(
    "NONE",
    "--trace-level",
    help="NONE | MODEL | FRAMEWORK | LIBRARY | SYSTEM | FULL: profiling passes after the "
    "uninstrumented run (the headline figures stay the uninstrumented ones).",
)
PROFILE_ITERATIONS = typer.Option(
    DEFAULT_ITERATIONS, min=1, help="Iterations of each profiling pass."
)
PREPROCESSING = typer.Option(
    None,
    "--preprocessing",
    help="reference (torchvision's bits) | fast (the same decoded pixels, torch's 8-bit "
    "resize: at most one level off, 2 to 3 times quicker); default: the manifest's.",
)
DEVICE = typer.Option("cpu", help="cpu | cuda | cuda:N")
THREADS = typer.Option(
    0,
    min=0,
    help="Intra-op threads (0: chosen for the scenario and the CPUs other processes leave "
    "free; the run prints the count and why).",
)
WORKERS = typer.Option(1, min=1, help="SUT worker threads for Offline/Server.")
OPTION = typer.Option([], "--option", "-o", help="Backend option KEY=VALUE, e.g. mode=torchscript.")
AS_JSON = typer.Option(False, "--json", help="Print the result as JSON on stdout.")
