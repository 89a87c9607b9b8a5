"""Validating and accepting an evaluation request; nothing is enqueued unless it is valid.

Each check returns a typed rejection naming the field at fault and what it accepts; the
GraphQL layer turns those into error types of the mutation's result union. The model a
request names is looked up in ``model_registry``; what it may make a worker read (an
inline manifest's files, the dataset folder) is checked by ``confinement``.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections import Counter
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import BaseModel, ValidationError
from sqlalchemy.orm import Session

from services.api.bounds import (
    OutOfBounds,
    constraint_terms_problem,
    null_options_problem,
    scenario_problem,
)
from services.api.confinement import (
    MAX_NAME_CHARS,
    MAX_VERSION_CHARS,
    confine_manifest,
    dataset_spec,
    manifest_yaml_limits,
)
from services.api.faults import unavailable_dependency
from services.api.model_registry import find_model, known_model_names
from services.api.observability import UNAVAILABLE
from services.api.rejections import Rejection, RejectionKind
from services.bricks.options import BrickOptions
from services.core.constraints import (
    AgentView,
    ConstraintError,
    Requirement,
    device_named,
    framework_named,
    parse_terms,
    requirement,
)
from services.core.scenario import ScenarioConfig
from services.inference.backends import registry
from services.scheduler.agents import find_agent
from services.scheduler.planner import UnmetConstraint
from services.training.options import TrainingOptions
from shared import queues
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.manifest import (
    FIDELITIES,
    ManifestError,
    ModelManifest,
    as_fidelity,
    parse_manifest_text,
)
from shared.messages import EvaluationRequested
from shared.settings import Settings
from shared.trace_levels import TRACE_LEVELS
from shared.tracing import tracer

# Bounds of a submission. String limits are the column sizes of shared/db (evaluations,
# models): longer input is refused with a typed error, never truncated or sent to SQL
# (the model, version and dataset limits are services/api/confinement.py's).
MAX_BATCH_SIZE = 4096
MAX_DEVICE_CHARS = 50  # evaluations.device: String(50)
MAX_SEED = 2**31 - 1  # evaluations.seed: Integer
MAX_THREADS = 256  # intra-op threads an evaluation may ask for

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SubmitRequest:
    model: str | None = None
    version: str | None = None
    manifest_yaml: str | None = None
    framework: str | None = None
    # None: the device a constraint term names, else "cpu".
    device: str | None = None
    scenario: str = "offline"
    # Whatever the client sent; checked to be an object before use.
    settings: Any = dc_field(default_factory=dict)
    batch_size: int = 1
    dataset: str = "synthetic"
    samples: int | None = 64
    seed: int = 0
    trace_level: str = "NONE"
    # Input.fidelity over the manifest's own (stored in the evaluation's manifest); None:
    # the manifest's.
    preprocessing: str | None = None
    # {"require": [terms of services.core.constraints]}, plus the older structured
    # keys "hostname" and "framework_version" (a PEP 440 specifier on the framework).
    constraints: dict[str, Any] = dc_field(default_factory=dict)
    backend_options: Any = dc_field(default_factory=dict)
    # Intra-op threads over the agent's setting; None: the agent's, else chosen by it.
    threads: int | None = None
    # One evaluation on every matching agent, grouped for comparison, instead of one.
    fan_out: bool = False
    # A DLBricks evaluation's options (services/bricks/options.BrickOptions); None: a
    # LoadGen run on the dataset.
    bricks: dict[str, Any] | None = None
    # A training evaluation's options (services/training/options.TrainingOptions).
    training: dict[str, Any] | None = None
    # The group this evaluation joins and what it is in it (services/api/sweeps.py):
    # {"id": ..., "kind": "sweep", "parameter": ..., "value": ...}. None: its own, or a
    # fan-out's (fan_out).
    group: dict[str, Any] | None = None
    # A data-parallel gang (services/api/training_scaling.py): one training evaluation
    # per rank on this many distinct matching agents, each pinned to its agent, with its
    # rank and the ranks sharing its host in its group. None: one evaluation.
    gang_size: int | None = None


@dataclass(frozen=True)
class FanOut:
    """The evaluations of one fan-out, one per matching agent, sharing ``group_id``."""

    group_id: str
    evaluations: list[Evaluation]


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake_keys(data: dict[str, Any]) -> dict[str, Any]:
    """GraphQL clients write minDurationS; ScenarioConfig names it min_duration_s."""
    return {_CAMEL.sub("_", k).lower(): v for k, v in data.items()}


def scenario_config(scenario: str, settings: Any) -> ScenarioConfig | Rejection:
    if not isinstance(settings, dict):
        return Rejection(
            "InvalidScenarioSettings",
            f'settings: must be an object such as {{"min_duration_s": 1}} (got {settings!r})',
            field="settings",
        )
    try:
        return ScenarioConfig.model_validate({**snake_keys(settings), "scenario": scenario})
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = ".".join(str(p) for p in error["loc"]) or "settings"
        field_name = loc if loc == "scenario" else f"settings.{loc}"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            accepted = sorted(set(ScenarioConfig.model_fields) - {"scenario"})
            message = f"unknown setting; accepted: {', '.join(accepted)}"
        return Rejection(
            "InvalidScenarioSettings",
            f"{field_name}: {message} (got {error.get('input')!r})",
            field=field_name,
        )


def setup_allowance_s(max_run_seconds: float) -> float:
    """Of a run's time limit, what model loading, calibration and warm-up may take:
    20 % of it, at most a minute (they take seconds for the models here)."""
    return min(60.0, 0.2 * max_run_seconds)


def run_cap_problem(scenario: ScenarioConfig, max_run_seconds: float) -> Rejection | None:
    """A run that cannot end within MAX_RUN_SECONDS would be killed at the limit, having
    measured nothing: refuse it now, naming the setting."""
    budget = max_run_seconds - setup_allowance_s(max_run_seconds)
    checks = [("min_duration_s", scenario.effective_min_duration_s)]
    if scenario.max_duration_s is not None:
        checks.append(("max_duration_s", scenario.max_duration_s))
    for name, seconds in checks:
        if seconds > budget:
            return Rejection(
                "InvalidScenarioSettings",
                f"settings.{name}: {seconds:g} s cannot finish within this deployment's run "
                f"limit (MAX_RUN_SECONDS={max_run_seconds:g} s, of which "
                f"{setup_allowance_s(max_run_seconds):g} s is kept for loading and "
                f"calibration); accepted: at most {budget:g} s",
                field=f"settings.{name}",
            )
    return None


def _resolve_manifest(
    session: Session, settings: Settings, request: SubmitRequest, *, viewer_id: int
) -> ModelManifest | Rejection:
    if request.manifest_yaml:
        try:
            inline = parse_manifest_text(
                request.manifest_yaml, source="manifest", limits=manifest_yaml_limits(settings)
            )
        except ManifestError as exc:
            return Rejection(
                "InvalidManifest", str(exc), field="manifest", problems=list(exc.problems)
            )
        return confine_manifest(inline, settings)
    if not request.model:
        return Rejection("InvalidInput", "model: give a model name or an inline manifest", "model")
    for field, value, limit in (
        ("model", request.model, MAX_NAME_CHARS),
        ("version", request.version or "", MAX_VERSION_CHARS),
    ):
        if len(value) > limit:
            return Rejection(
                "InvalidInput",
                f"{field}: at most {limit} characters (got {len(value)})",
                field=field,
                accepted=[f"at most {limit} characters"],
            )
    found = find_model(session, request.model, request.version, viewer_id=viewer_id)
    if found is None:
        ref = f"{request.model}:{request.version}" if request.version else request.model
        known = known_model_names(session, viewer_id=viewer_id)
        return Rejection(
            "UnknownModel",
            f"model: {ref!r} is neither registered nor in the catalogue; known: {', '.join(known)}",
            field="model",
            accepted=known,
        )
    manifest, origin = found
    if origin == "catalogue":
        return manifest  # shipped with the code: trusted, and its paths are its own
    # A registered manifest is re-checked: rows stored before registerModel checked paths.
    return confine_manifest(manifest, settings, field="model")


def _out_of_range(field: str, value: int, low: int, high: int) -> Rejection | None:
    if low <= value <= high:
        return None
    bound = f"at least {low}" if value < low else f"at most {high}"
    return Rejection(
        "InvalidInput",
        f"{field}: must be {bound} (got {value}); accepted: {low} to {high}",
        field=field,
        accepted=[f"{low}..{high}"],
    )


def backend_options_problem(framework: str, options: Any) -> Rejection | None:
    """Only the options the chosen backend declares (its config.py's options model), each
    of its type and within its bounds; never one the backend refuses from a submission."""
    if not isinstance(options, dict):
        return Rejection(
            "InvalidInput", "backendOptions: must be an object", field="backendOptions"
        )
    spec = registry.spec_for(framework)
    known = list(spec.option_keys)
    for key in options:
        field = f"backendOptions.{key}"[:80]
        if key in spec.refused_options:
            return Rejection(
                "InvalidInput",
                f"{field}: not accepted from a submission: {spec.refused_options[key]}; "
                f"accepted for {framework}: {', '.join(known) or '(none)'}",
                field=field,
                accepted=known,
            )
        if key not in known:
            return Rejection(
                "InvalidInput",
                f"{field}: not an option of the {framework} backend; "
                f"accepted: {', '.join(known) or '(none)'}",
                field=field,
                accepted=known,
            )
    try:
        spec.options.model_validate(options)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = str(error["loc"][0]) if error["loc"] else ""
        field = f"backendOptions.{key}"
        shown = repr(options.get(key))[:40]
        return Rejection(
            "InvalidInput",
            f"{field}: {shown} is not accepted: {error['msg']}",
            field=field,
            accepted=[error["msg"]],
        )
    return None


def _invalid(problem: OutOfBounds, kind: RejectionKind = "InvalidInput") -> Rejection:
    return Rejection(kind, problem.message, field=problem.field, accepted=[problem.accepted])


def _check_simple_fields(
    request: SubmitRequest, settings: Settings, framework: str, device: str
) -> Rejection | None:
    names = registry.backend_names()
    if framework not in names:
        return Rejection(
            "InvalidInput",
            f"framework: {framework!r} is not a backend; accepted: {', '.join(names)}",
            field="framework",
            accepted=names,
        )
    problem = _out_of_range("batchSize", request.batch_size, 1, MAX_BATCH_SIZE)
    if problem is None and request.samples is not None:
        problem = _out_of_range("samples", request.samples, 1, settings.max_samples)
    if problem is None:
        problem = _out_of_range("seed", request.seed, 0, MAX_SEED)
    if problem is None and request.threads is not None:
        problem = _out_of_range("threads", request.threads, 1, MAX_THREADS)
    if problem is not None:
        return problem
    if request.trace_level not in TRACE_LEVELS:
        return Rejection(
            "InvalidInput",
            f"traceLevel: {request.trace_level!r}; accepted: {', '.join(TRACE_LEVELS)}",
            field="traceLevel",
            accepted=list(TRACE_LEVELS),
        )
    if request.preprocessing is not None and request.preprocessing not in FIDELITIES:
        return Rejection(
            "InvalidInput",
            f"preprocessing: {request.preprocessing!r}; accepted: {', '.join(FIDELITIES)}",
            field="preprocessing",
            accepted=list(FIDELITIES),
        )
    if len(device) > MAX_DEVICE_CHARS:
        return Rejection(
            "InvalidInput",
            f"device: at most {MAX_DEVICE_CHARS} characters, e.g. 'cpu' or 'cuda'",
            field="device",
            accepted=[f"at most {MAX_DEVICE_CHARS} characters"],
        )
    try:
        queues.inference_queue(framework, device)
    except ValueError as exc:
        return Rejection("InvalidInput", str(exc), field="device")
    runs_on = registry.spec_for(framework).devices
    if device.split(":")[0] not in runs_on:
        return Rejection(
            "InvalidInput",
            f"device: the {framework} backend does not run on {device!r}; "
            f"accepted: {', '.join(runs_on)}",
            field="device",
            accepted=list(runs_on),
        )
    if framework == "null" and isinstance(request.backend_options, dict):
        # First: its limits are the deployment's settings, and its messages name them.
        out_of_bounds = null_options_problem(request.backend_options, settings)
        if out_of_bounds is not None:
            return _invalid(out_of_bounds)
    return backend_options_problem(framework, request.backend_options)


def bricks_options(
    request: SubmitRequest, framework: str, manifest: ModelManifest
) -> dict[str, Any] | Rejection | None:
    """The DLBricks options as stored (snake_case, bounded), or why they are refused."""
    if request.bricks is None:
        return None
    return _torch_options(
        "bricks", request.bricks, BrickOptions, framework, manifest, "torch.export modules"
    )


def training_options(
    request: SubmitRequest, framework: str, manifest: ModelManifest
) -> dict[str, Any] | Rejection | None:
    """The training options as stored (snake_case, bounded), or why they are refused."""
    if request.training is None:
        return None
    return _torch_options(
        "training", request.training, TrainingOptions, framework, manifest, "torch training"
    )


def _torch_options(
    name: str,
    given: dict[str, Any],
    model: type[BaseModel],
    framework: str,
    manifest: ModelManifest,
    why: str,
) -> dict[str, Any] | Rejection:
    if framework != "torch" or manifest.source.architecture is None:
        return Rejection(
            "InvalidInput",
            f"{name}: the model runs on {framework} from "
            f"{manifest.source.architecture or 'a model file'}; accepted: torch models built "
            f"from an architecture ({why})",
            field=name,
        )
    try:
        options = model.model_validate(snake_keys(dict(given)))
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        return Rejection("InvalidInput", f"{name}.{where}: {error['msg']}", field=f"{name}.{where}")
    dumped: dict[str, Any] = options.model_dump(mode="json")
    return dumped


CONSTRAINT_KEYS = ("require", "hostname", "framework_version")


def _constraint_texts(request: SubmitRequest, settings: Settings) -> list[str] | Rejection:
    """The request's constraints as terms of the constraint language."""
    unknown = set(request.constraints) - set(CONSTRAINT_KEYS)
    if unknown:
        return Rejection(
            "InvalidInput",
            f"constraints: unknown {sorted(unknown)}; accepted: {', '.join(CONSTRAINT_KEYS)}",
            field="constraints",
            accepted=list(CONSTRAINT_KEYS),
        )
    require = request.constraints.get("require", [])
    if not isinstance(require, list) or not all(isinstance(t, str) for t in require):
        return Rejection(
            "InvalidInput",
            'constraints.require: must be a list of terms such as ["onnxruntime>=1.20", "gpu"]',
            field="constraints.require",
        )
    texts = list(require)
    if request.constraints.get("hostname"):
        texts.append(f"host={request.constraints['hostname']}")
    problem = constraint_terms_problem(texts, settings)
    if problem is not None:
        return _invalid(problem)
    version = request.constraints.get("framework_version") or ""
    if len(version) > settings.max_constraint_term_chars:
        accepted = f"at most {settings.max_constraint_term_chars} characters"
        return Rejection(
            "InvalidInput",
            f"constraints.frameworkVersion: {len(version)} characters; accepted: {accepted}",
            field="constraints.frameworkVersion",
            accepted=[accepted],
        )
    return texts


def _target(
    request: SubmitRequest, manifest: ModelManifest, texts: list[str]
) -> tuple[str, str, list[str]] | Rejection:
    """Framework, device and the full list of terms: a framework or device named only by
    a constraint term (``onnxruntime>=1.20``, ``device=cuda``) is the one that runs."""
    try:
        terms = parse_terms(texts, frameworks=registry.backend_names())
        named_framework, named_device = framework_named(terms), device_named(terms)
    except ConstraintError as exc:
        return Rejection("InvalidInput", str(exc), field=f"constraints.require[{exc.index}]")
    except ValueError as exc:
        return Rejection("InvalidInput", str(exc), field="constraints.require")
    framework = request.framework or named_framework or manifest.framework.name
    if named_framework and named_framework != framework:
        return Rejection(
            "InvalidInput",
            f"constraints.require: names framework {named_framework!r} but framework is "
            f"{framework!r}; drop one of them",
            field="constraints.require",
        )
    device = request.device or named_device or "cpu"
    version = request.constraints.get("framework_version")
    if version:
        try:
            SpecifierSet(version)
        except InvalidSpecifier:
            return Rejection(
                "InvalidInput",
                f"constraints.frameworkVersion: {version!r} is not a version constraint "
                "such as '>=2.1,<3'",
                field="constraints.frameworkVersion",
            )
        texts = [*texts, f"{framework}{version}"]
    return framework, device, texts


def _requirement(
    manifest: ModelManifest, framework: str, device: str, texts: list[str]
) -> Requirement | Rejection:
    try:
        return requirement(
            framework=framework,
            device=device,
            texts=texts,
            frameworks=registry.backend_names(),
            manifest_framework=manifest.framework.name,
            manifest_version=manifest.framework.version,
            manifest_ref=manifest.ref,
        )
    except ConstraintError as exc:  # every term was parsed in _target; kept as a guard
        return Rejection("InvalidInput", str(exc), field="constraints")


def _gang(
    agents: list[AgentView], size: int, group_info: dict[str, Any]
) -> tuple[list[list[str]], list[dict[str, Any] | None]] | Rejection:
    """Pins and groups of a gang of ``size`` ranks on distinct agents, in the order of their
    ids (so a gang of two reuses the agent a gang of one ran on)."""
    chosen = sorted(agents, key=lambda a: a.id)[:size]
    if len(chosen) < size:
        return Rejection(
            "NoMatchingAgent",
            f"worldSizes: {size} ranks need {size} live agents that can run this training; "
            f"{len(agents)} match",
            field="worldSizes",
        )
    on_host = Counter(a.hostname for a in chosen)
    infos: list[dict[str, Any] | None] = [
        {**group_info, "rank": rank, "host_ranks": on_host[agent.hostname]}
        for rank, agent in enumerate(chosen)
    ]
    return [[f"agent={a.id}"] for a in chosen], infos


def submit(
    session: Session,
    settings: Settings,
    publish: Publisher,
    *,
    owner_id: int,
    request: SubmitRequest,
) -> Evaluation | FanOut | Rejection:
    """Validate, store the evaluation(s) as QUEUED and ask the scheduler to plan them.

    A fan-out stores one evaluation per matching agent, each pinned to its agent by an
    ``agent=ID`` term, so the scheduler routes each to exactly that worker.
    """
    manifest = _resolve_manifest(session, settings, request, viewer_id=owner_id)
    if isinstance(manifest, Rejection):
        return manifest
    texts = _constraint_texts(request, settings)
    if isinstance(texts, Rejection):
        return texts
    target = _target(request, manifest, texts)
    if isinstance(target, Rejection):
        return target
    framework, device, texts = target
    problem = _check_simple_fields(request, settings, framework, device)
    if problem is not None:
        return problem
    if request.preprocessing is not None:
        manifest = manifest.with_fidelity(as_fidelity(request.preprocessing))
    bricks = bricks_options(request, framework, manifest)
    if isinstance(bricks, Rejection):
        return bricks
    training = training_options(request, framework, manifest)
    if isinstance(training, Rejection):
        return training
    if bricks is not None and training is not None:
        return Rejection(
            "InvalidInput", "training: give bricks or training, not both", field="training"
        )
    if bricks is not None or training is not None:
        dataset: str | Rejection = "bricks" if bricks is not None else "synthetic"
    else:
        dataset = dataset_spec(settings, request.dataset)
    if isinstance(dataset, Rejection):
        return dataset
    scenario = scenario_config(request.scenario, request.settings)
    if isinstance(scenario, Rejection):
        return scenario
    too_long = run_cap_problem(scenario, settings.max_run_seconds)
    if too_long is not None:
        return too_long
    out_of_bounds = scenario_problem(scenario, settings)
    if out_of_bounds is not None:
        return _invalid(out_of_bounds, "InvalidScenarioSettings")
    need = _requirement(manifest, framework, device, texts)
    if isinstance(need, Rejection):
        return need
    choice = find_agent(session, settings, need)
    if isinstance(choice, UnmetConstraint):
        return Rejection("NoMatchingAgent", choice.message, field=choice.constraint)
    group_id = str(uuid.uuid4()) if request.fan_out else None
    group_info = None
    if request.group is not None:
        group_id = str(request.group["id"])
        group_info = {k: v for k, v in request.group.items() if k != "id"}
    pins = [[f"agent={a.id}"] for a in choice.agents] if request.fan_out else [[]]
    infos: list[dict[str, Any] | None] = [group_info] * len(pins)
    if request.gang_size is not None:
        gang = _gang(choice.agents, request.gang_size, group_info or {})
        if isinstance(gang, Rejection):
            return gang
        pins, infos = gang
    evaluations = [
        Evaluation(
            id=str(uuid.uuid4()),
            owner_id=owner_id,
            model_name=manifest.name,
            model_version=manifest.version,
            manifest=manifest.to_dict(),
            framework=framework,
            device=device,
            scenario=scenario.model_dump(mode="json"),
            batch_size=request.batch_size,
            dataset=dataset,
            dataset_count=request.samples,
            seed=request.seed,
            trace_level=request.trace_level,
            # Stored as terms only: the scheduler re-reads them with the manifest's own.
            constraints={"require": [*texts, *pin]},
            backend_options=request.backend_options,
            threads=request.threads,
            bricks=bricks,
            training=training,
            group_id=group_id,
            group_info=info,
        )
        for pin, info in zip(pins, infos, strict=True)
    ]
    session.add_all(evaluations)
    # Commit before publishing: the scheduler must find the rows when the messages arrive.
    session.commit()
    for evaluation in evaluations:
        try:
            # The root of the evaluation's trace: the scheduler's and workers' spans hang
            # below it through the context the message carries.
            with tracer().start_as_current_span("api.submit_evaluation") as span:
                span.set_attribute("benchstack.evaluation_id", evaluation.id)
                span.set_attribute("benchstack.model", f"{manifest.name}:{manifest.version}")
                span.set_attribute("benchstack.trace_level", request.trace_level)
                publish(
                    queues.PLAN_EVALUATION, EvaluationRequested(evaluation_id=evaluation.id), None
                )
        except Exception as exc:
            # The row is the outbox: it stays QUEUED and the scheduler's sweeper publishes
            # it once the broker is back. The client gets its id and a reason that says so.
            log.warning(
                "evaluation %s: publish failed (%s); left to the sweeper", evaluation.id, exc
            )
            broker_down = unavailable_dependency(exc) == "broker"
            cause = "broker unavailable" if broker_down else "could not publish"
            evaluation.reason = (
                f"{cause} at submission ({exc.__class__.__name__}); "
                "the scheduler's sweeper dispatches it again"
            )
            session.commit()
            if broker_down:
                UNAVAILABLE.labels(dependency="broker").inc()
    if (request.fan_out or request.gang_size is not None) and group_id is not None:
        return FanOut(group_id=group_id, evaluations=evaluations)
    return evaluations[0]
