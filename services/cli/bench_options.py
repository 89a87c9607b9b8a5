"""The options bench, sweep and find-peak share: one bundle (``BenchOptions``) that makes
the run request (services/core/request.py ``RunRequest``, checked as the stack checks a
submission) and the embedded launcher's local choices, and the Typer declarations of the
options they have in common, so each reads the same in every command.

A command builds one ``BenchOptions`` from its parameters (``BenchOptions.from_params``); what
it does not offer keeps the default here (sweep has no --mode, find-peak always runs Server).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import typer

from services.cli.errors import fail
from services.core.manifest_sections import Fidelity, as_fidelity
from services.core.request import RunRequest
from services.embedded.bench import run_bench
from services.embedded.request import Local, Progress, checked
from services.inference.backends import registry
from services.inference.profiling.levels import TraceLevelError, parse_trace_level
from services.inference.profiling.passes import DEFAULT_ITERATIONS
from shared.settings import get_settings

# The options that set a scenario setting: option -> ScenarioConfig field.
SETTINGS = {
    "mode": "mode",
    "profile": "profile",
    "duration": "min_duration_s",
    "max_duration": "max_duration_s",
    "min_queries": "min_query_count",
    "max_queries": "max_query_count",
    "target_qps": "target_qps",
    "latency_bound_ms": "target_latency_ms",
    "latency_percentile": "latency_percentile",
    "samples_per_query": "samples_per_query",
}
# LoadGen's seeds, each set from --seed (0: LoadGen's own).
SEEDS = ("qsl_rng_seed", "sample_index_rng_seed", "schedule_rng_seed")
RunFn = Callable[[RunRequest], dict[str, Any]]


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

    def request(self) -> RunRequest:
        """The request, checked as the stack checks a submission; a bad option exits with
        its name and what it accepts."""
        preprocessing = parse_fidelity(self.preprocessing, field="--preprocessing")
        try:
            trace_level = parse_trace_level(self.trace_level, field="--trace-level")
        except TraceLevelError as exc:
            fail([str(exc)])
        seeds = dict.fromkeys(SEEDS, self.seed or None)
        given = {name: getattr(self, option) for option, name in SETTINGS.items()}
        request = RunRequest(
            model=self.model,
            framework=self.framework,
            device=self.device,
            scenario=self.scenario,
            settings={k: v for k, v in (given | seeds).items() if v is not None},
            batch_size=self.batch_size,
            dataset=self.dataset,
            samples=self.samples,
            seed=self.seed,
            trace_level=trace_level,
            preprocessing=preprocessing,
            backend_options=parse_options(self.option),
            threads=self.threads or None,  # 0: chosen for the scenario and the free CPUs
        )
        try:
            checked(request, get_settings(), spell=option_name)
        except ValueError as exc:
            fail([str(exc)])
        return request

    def local(self) -> Local:
        """The choices the embedded launcher makes here (a stack's agent makes its own)."""
        return Local(workers=self.workers, profile_iterations=self.profile_iterations)

    def runner(self) -> tuple[RunRequest, Callable[[Progress], RunFn]]:
        """The checked request, and what runs it (or a campaign's member made from it)
        here and stores it, given the progress to show: bench, sweep and find-peak's set-up."""
        request, local, settings = self.request(), self.local(), get_settings()

        def run_with(progress: Progress) -> RunFn:
            return lambda r: run_bench(r, settings, progress, local)

        return request, run_with


def option_name(field: str) -> str:
    """A request field (services/core/request.py) as the option that sets it."""
    name = field.removeprefix("settings.")
    options = {v: k for k, v in SETTINGS.items()} | {"threads": "threads"}
    return "--" + options.get(name, name).replace("_", "-")


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
