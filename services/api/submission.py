"""Validating and accepting an evaluation request; nothing is enqueued unless it is valid.

Each check returns a typed rejection naming the field at fault and what it accepts; the
GraphQL layer turns those into error types of the mutation's result union.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dc_field
from functools import lru_cache
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from services.inference.backends.base import backend_names
from services.inference.loadgen.config import ScenarioConfig
from services.scheduler.agents import find_agent
from services.scheduler.constraints import (
    ConstraintError,
    Requirement,
    device_named,
    framework_named,
    parse_terms,
    requirement,
)
from services.scheduler.planner import UnmetConstraint
from shared import queues
from shared.catalogue import list_catalogue
from shared.db.catalog import RegisteredModel
from shared.db.evaluation_repo import fail
from shared.db.evaluations import Evaluation
from shared.manifest import ManifestError, ModelManifest, parse_manifest, parse_manifest_text
from shared.messages import EvaluationRequested, Message
from shared.settings import Settings
from shared.tracing import TRACE_LEVELS

Publisher = Callable[[str, Message, str | None], None]


@dataclass(frozen=True)
class Rejection:
    # UnknownModel, InvalidScenarioSettings, NoMatchingAgent, InvalidManifest or InvalidInput
    kind: str
    message: str
    field: str = ""
    problems: list[str] = dc_field(default_factory=list)
    accepted: list[str] = dc_field(default_factory=list)


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
    # {"require": [terms of services.scheduler.constraints]}, plus the older structured
    # keys "hostname" and "framework_version" (a PEP 440 specifier on the framework).
    constraints: dict[str, Any] = dc_field(default_factory=dict)
    backend_options: Any = dc_field(default_factory=dict)
    # One evaluation on every matching agent, grouped for comparison, instead of one.
    fan_out: bool = False


@dataclass(frozen=True)
class FanOut:
    """The evaluations of one fan-out, one per matching agent, sharing ``group_id``."""

    group_id: str
    evaluations: list[Evaluation]


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake_keys(data: dict[str, Any]) -> dict[str, Any]:
    """GraphQL clients write minDurationS; ScenarioConfig names it min_duration_s."""
    return {_CAMEL.sub("_", k).lower(): v for k, v in data.items()}


@lru_cache(maxsize=1)
def _catalogue() -> tuple[ModelManifest, ...]:
    # The shipped manifests never change while the API runs; parse them once, not per request.
    return tuple(list_catalogue())


def find_model(session: Session, name: str, version: str | None) -> ModelManifest | None:
    """A registered model (newest registration first), else a catalogue model.

    Names are looked up, never read as paths: a request must not make the API read files.
    """
    query = select(RegisteredModel).where(RegisteredModel.name == name)
    if version:
        query = query.where(RegisteredModel.version == version)
    row = session.scalar(query.order_by(RegisteredModel.created_at.desc()).limit(1))
    if row is not None:
        return parse_manifest(row.manifest)
    for manifest in _catalogue():
        if manifest.name == name and (not version or manifest.version == version):
            return manifest
    return None


def known_model_names(session: Session) -> list[str]:
    registered = session.scalars(select(RegisteredModel.name).distinct())
    return sorted({*registered, *(m.name for m in _catalogue())})


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


def _resolve_manifest(session: Session, request: SubmitRequest) -> ModelManifest | Rejection:
    if request.manifest_yaml:
        try:
            return parse_manifest_text(request.manifest_yaml, source="manifest")
        except ManifestError as exc:
            return Rejection(
                "InvalidManifest", str(exc), field="manifest", problems=list(exc.problems)
            )
    if not request.model:
        return Rejection("InvalidInput", "model: give a model name or an inline manifest", "model")
    manifest = find_model(session, request.model, request.version)
    if manifest is None:
        ref = f"{request.model}:{request.version}" if request.version else request.model
        known = known_model_names(session)
        return Rejection(
            "UnknownModel",
            f"model: {ref!r} is neither registered nor in the catalogue; known: {', '.join(known)}",
            field="model",
            accepted=known,
        )
    return manifest


def _check_simple_fields(request: SubmitRequest, framework: str, device: str) -> Rejection | None:
    if framework not in backend_names():
        return Rejection(
            "InvalidInput",
            f"framework: {framework!r} is not a backend; accepted: {', '.join(backend_names())}",
            field="framework",
            accepted=backend_names(),
        )
    if request.batch_size < 1:
        return Rejection("InvalidInput", "batchSize: must be at least 1", field="batchSize")
    if request.samples is not None and request.samples < 1:
        return Rejection("InvalidInput", "samples: must be at least 1", field="samples")
    if request.trace_level not in TRACE_LEVELS:
        return Rejection(
            "InvalidInput",
            f"traceLevel: {request.trace_level!r}; accepted: {', '.join(TRACE_LEVELS)}",
            field="traceLevel",
            accepted=list(TRACE_LEVELS),
        )
    try:
        queues.inference_queue(framework, device)
    except ValueError as exc:
        return Rejection("InvalidInput", str(exc), field="device")
    if not isinstance(request.backend_options, dict):
        return Rejection(
            "InvalidInput", "backendOptions: must be an object", field="backendOptions"
        )
    return None


CONSTRAINT_KEYS = ("require", "hostname", "framework_version")


def _constraint_texts(request: SubmitRequest) -> list[str] | Rejection:
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
    return texts


def _target(
    request: SubmitRequest, manifest: ModelManifest, texts: list[str]
) -> tuple[str, str, list[str]] | Rejection:
    """Framework, device and the full list of terms: a framework or device named only by
    a constraint term (``onnxruntime>=1.20``, ``device=cuda``) is the one that runs."""
    try:
        terms = parse_terms(texts, frameworks=backend_names())
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
            frameworks=backend_names(),
            manifest_framework=manifest.framework.name,
            manifest_version=manifest.framework.version,
            manifest_ref=manifest.ref,
        )
    except ConstraintError as exc:  # every term was parsed in _target; kept as a guard
        return Rejection("InvalidInput", str(exc), field="constraints")


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
    manifest = _resolve_manifest(session, request)
    if isinstance(manifest, Rejection):
        return manifest
    texts = _constraint_texts(request)
    if isinstance(texts, Rejection):
        return texts
    target = _target(request, manifest, texts)
    if isinstance(target, Rejection):
        return target
    framework, device, texts = target
    problem = _check_simple_fields(request, framework, device)
    if problem is not None:
        return problem
    scenario = scenario_config(request.scenario, request.settings)
    if isinstance(scenario, Rejection):
        return scenario
    need = _requirement(manifest, framework, device, texts)
    if isinstance(need, Rejection):
        return need
    choice = find_agent(session, settings, need)
    if isinstance(choice, UnmetConstraint):
        return Rejection("NoMatchingAgent", choice.message, field=choice.constraint)
    group_id = str(uuid.uuid4()) if request.fan_out else None
    pins = [[f"agent={a.id}"] for a in choice.agents] if request.fan_out else [[]]
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
            dataset=request.dataset,
            dataset_count=request.samples,
            seed=request.seed,
            trace_level=request.trace_level,
            # Stored as terms only: the scheduler re-reads them with the manifest's own.
            constraints={"require": [*texts, *pin]},
            backend_options=request.backend_options,
            group_id=group_id,
        )
        for pin in pins
    ]
    session.add_all(evaluations)
    # Commit before publishing: the scheduler must find the rows when the messages arrive.
    session.commit()
    for evaluation in evaluations:
        try:
            publish(queues.PLAN_EVALUATION, EvaluationRequested(evaluation_id=evaluation.id), None)
        except Exception as exc:
            # The rows exist but no worker will ever see them: say so instead of QUEUED.
            for row in evaluations:
                fail(session, row.id, f"broker: could not enqueue the evaluation ({exc})")
            session.commit()
            raise
    if group_id is not None:
        return FanOut(group_id=group_id, evaluations=evaluations)
    return evaluations[0]
