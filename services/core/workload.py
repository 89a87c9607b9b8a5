"""The contract of a kind of measurement: a Workload plug-in.

Each kind is one folder, ``services/workloads/<name>/``, whose ``workload.py`` declares a
``WORKLOAD`` (services/workloads/__init__.py finds them). The stages ask it, never the
kind's name: whether the scheduler plans dataset shards first, which options a submission
may give, what the measurement child runs, whether the worker's resident child may run it,
and how the aggregator reads and stores its outcome.

The measurement and the storing are named as ``"module:function"`` and imported when used:
the kinds bring heavy imports (torch.export, LoadGen) that the API, the scheduler and the
other kinds must not pay for.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from services.core.manifest import ModelManifest

if TYPE_CHECKING:
    # Types only: the core layer holds contracts, and a run's resources (a database
    # session factory, an object store) are the stages' to make.
    from services.core.messages import RunInference
    from shared.runtime import Resources

# The kind of every evaluation that names none: a LoadGen run on a dataset's shards.
DEFAULT_WORKLOAD = "loadgen"
# The largest batch a request may ask for: the API's submission checks and a sweep's points.
MAX_BATCH_SIZE = 4096
# The GraphQL input field of a workload's options when it has no typed one of its own.
GENERIC_OPTIONS_FIELD = "workloadOptions"
# A workload's name is stored in Evaluation.workload (String(40)).
MAX_WORKLOAD_NAME_CHARS = 40

# Why this workload cannot measure this model on this framework; None: it can.
Acceptance = Callable[[str, ModelManifest], str | None]


def any_model(framework: str, manifest: ModelManifest) -> str | None:
    return None


def _ignore(_: Any) -> None:
    """A hook no one follows."""


def _unguarded(*_cleanups: Callable[[], None]) -> AbstractContextManager[None]:
    return contextlib.nullcontext()


@dataclass(frozen=True)
class RunHooks:
    """What a launcher that measures in its own process adds to a run (the embedded mode,
    services/embedded/bench.py); a stack's measurement child runs with these defaults.

    They change what a person sees and how the process leaves, never a figure: the run's
    settings travel in its RunInference message."""

    # Progress for the CLI's bars: each stage's name, the LoadGen run's expected seconds,
    # and each LoadGen phase (a RunProgress, from a thread of its own; None: no poller).
    on_stage: Callable[[str], None] = _ignore
    on_run_start: Callable[[float], None] = _ignore
    on_loadgen: Callable[[Any], None] | None = None
    # Entered around the LoadGen run with the measurement's cleanups (its temporary files,
    # its host claim): the embedded mode's Ctrl-C exit (services/embedded/interrupt.py).
    interruptible: Callable[..., AbstractContextManager[None]] = _unguarded
    # SUT worker threads issuing queries (`bench --workers`); the stack's runs use one.
    workers: int = 1
    # The dataset's sorted class folders, for accuracy against a labels file by name.
    class_names: tuple[str, ...] = ()
    # The run's profiler (services/inference/profiling/run_profile.RunProfiler) when the
    # launcher started it before the measurement (its dataset and preprocess steps, its
    # iterations); None: the measurement makes its own at the message's trace level.
    profiler: Any = None


@dataclass(frozen=True)
class AgentRun:
    """One measurement on an agent, as the measurement child hands it to its workload."""

    message: RunInference
    agent_id: str
    # Where its files go in the object store: runs/<run_id>/attempt-<n>.
    prefix: str
    # What every run this agent measures applies (e.g. {"intra_op_threads": 2}).
    agent_settings: dict[str, Any]
    # The worker's settings, and the store and database made from them in this child.
    resources: Resources
    hooks: RunHooks = field(default_factory=RunHooks)


@dataclass(frozen=True)
class PricedRate:
    """What one stored run of a workload that advice prices by its own rate delivers
    (``Workload.priced_rate``): advice's cost per million ``unit`` is the machine's price
    per hour over ``per_second`` x 3600, from the fastest judged run of each system."""

    # e.g. output tokens/s; None: the run gave none.
    per_second: float | None
    # What a million of costs: "output tokens".
    unit: str
    # The run's requests/s at that rate (advice's QPS).
    requests_per_second: float | None
    # What tells its systems apart beyond the machine (engine, served model, endpoint).
    settings: dict[str, Any]
    # Empty: advice may quote it (judged, e.g. VALID against its own latency bounds);
    # else why not, in words.
    unjudged: str = ""


@dataclass(frozen=True)
class Workload:
    """What one kind of measurement declares; see the module's docstring."""

    # Stored in Evaluation.workload and carried by RunInference.workload.
    name: str
    # One line for help texts and errors.
    summary: str
    # The options a submission gives for it, validated and stored as JSON; None: takes none.
    options: type[BaseModel] | None
    # True: the scheduler plans the dataset's shards and the preprocess workers fill them
    # before the run. False: the run reads no dataset; the evaluation's dataset column
    # says ``dataset_label``.
    needs_dataset: bool
    dataset_label: str
    # The measurement child's entry: (run: AgentRun) -> {name: object key}; the keys go to
    # RunCompleted.log_keys.
    measure: str
    # The aggregator's: read (evaluation, message: RunCompleted, store) -> an outcome, or
    # raise KeyError/ValueError/ObjectNotFound when it is missing or malformed; save
    # (session, evaluation, message, outcome) stores it once the evaluation SUCCEEDED.
    read: str
    save: str
    accepts: Acceptance = any_model
    # Whether the worker's resident child (which keeps models loaded between runs) may run
    # it; False gives every run a fresh child, whose peak memory is its own.
    resident: bool = True
    # What the edges ask instead of its name (the defaults fit a kind that declares none):
    # The GraphQL input field its options come in (a typed shortcut such as ``training``,
    # else the generic ``workloadOptions``); errors about its options name it.
    options_field: str = GENERIC_OPTIONS_FIELD
    # True: its run is the request's MLPerf scenario through LoadGen, so the scenario's
    # max_duration_s bounds it (the user's quota) and campaigns that vary scenario settings
    # (repeats, a sweep, find-peak, the accuracy + performance pair) may run it.
    runs_scenario: bool = False
    # True: a run may be one rank of a data-parallel gang (a training-scaling campaign).
    data_parallel: bool = False
    # True: LoadGen's validity and stability are its run's verdict and the evaluation's
    # scenario is its own. False: it times its own steps, its host's state is the verdict
    # (a fan-out's comparison names the workload where the scenario goes).
    judged_by_loadgen: bool = True
    # "module:function": (its stored outcome document) -> its fan-out comparison row's figures
    # (services/api/fan_out.FanOutRow fields); None: LoadGen's confidence intervals.
    fan_out_figures: str | None = None
    # Its report section: "module:function", (its stored outcome document) ->
    # services/core/report_section.ReportSection, which `benchstack show`'s table, the
    # shared HTML report and its CSV columns render for its runs; None: LoadGen's report.
    report_section: str | None = None
    # "module:function": (its stored outcome document) -> PricedRate: `advise` prices its
    # runs by that rate (cost per million output tokens); None: advice reads LoadGen's
    # find-peak probes (cost per million inferences).
    priced_rate: str | None = None
    # Its section of the web UI's run page: "package:path" of a JS module inside its folder
    # (e.g. "services.workloads.training:web/view.js"), served by the API at
    # /workloads/<name>/view.js; the page calls its ``sections(evaluation, run, page)``.
    # None: the page's LoadGen sections.
    web_view: str | None = None
    # Its surfaces at the edges, each "module:attribute" in its own folder, imported only by
    # the edge that shows it (they sit above this layer: the folder's modules for them
    # import nothing of the edges, which lend what they need; see CommandKit):
    # "module:function": (root: typer.Typer) -> None, adding its `benchstack` command(s) to
    # the root app; services/cli/main.py calls each. None: no command of its own.
    cli_command: str | None = None
    # "module:Class": the strawberry input its options come in, as the field named
    # ``options_field`` of submitEvaluation's input; None: only ``workloadOptions`` (JSON).
    graphql_options_input: str | None = None
    # "module:Class": the strawberry type of its run's outcome, a field of GraphQL's Run
    # named after the workload; the class's ``from_report(stored report dict)`` gives it,
    # or None for a run of another kind. None: its Run has no such field.
    graphql_result: str | None = None
    # "module:function": (kit: QueryKit) -> a strawberry type whose fields join GraphQL's
    # Query (what the workload's stored figures answer); None: it adds no query.
    graphql_queries: str | None = None


@dataclass(frozen=True)
class CommandKit:
    """What the CLI lends the commands workloads declare (``Workload.cli_command``). Those
    commands live in their workload's folder, below the CLI and the embedded launcher, so
    they reach them through this, found as the command's ``typer.Context.obj``."""

    # Expected failures (a bad option, a missing file) turned into one-line messages and
    # exit 1, never a traceback (services/cli/errors.user_errors).
    user_errors: Callable[[], AbstractContextManager[None]]
    # How a run held its host, as `bench` prints it: busy, overlapped, waited, threads.
    host_text: Callable[[dict[str, Any]], str]
    # `benchstack bench` on a request (services/core/request.RunRequest), run on a given
    # manifest instead of resolving its model, under given settings: the run's stored
    # report. Typed where it is called (services/workloads/bricks/whole_model.Bench):
    # core/request.py names this module's constants, so naming it here would loop.
    bench: Callable[..., dict[str, Any]]
    # The exit status of a command stopped by Ctrl-C (128 + SIGINT, as shells report it).
    interrupted_exit: int
    # The console tables and reports go to, as every command prints them: the terminal's
    # width, or nothing cut when piped (services/cli/render.output_console).
    output_console: Callable[[], Any]

    @classmethod
    def of(cls, context: Any) -> CommandKit:
        """The kit a command's typer (click) context carries: the root app's ``obj``."""
        kit: CommandKit | None = context.find_object(cls)
        if kit is None:
            raise RuntimeError(
                "a workload's command runs under the `benchstack` app (services/cli/main.py), "
                "which lends it its CommandKit"
            )
        return kit


@dataclass(frozen=True)
class QueryKit:
    """What the API lends the queries workloads declare (``Workload.graphql_queries``),
    which live in their folder below it."""

    # ``await read(info, fn, *args)``: the caller signed in (else the API's refusal), then
    # ``fn(session, *args)`` in a read-only database session off the event loop, bounded
    # by the API's database timeout, as the API's own queries read.
    read: Callable[..., Awaitable[Any]]


def entry(path: str) -> Callable[..., Any]:
    """The function a ``"module:function"`` path names, imported now."""
    module, _, name = path.partition(":")
    function: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return function
