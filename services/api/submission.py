"""Validating and accepting an evaluation request; nothing is enqueued unless it is valid.

Each check returns a typed rejection naming the field at fault and what it accepts; the
GraphQL layer turns those into error types of the mutation's result union. The model a
request names is looked up in ``model_registry``; what it may make a worker read (an
inline manifest's files, the dataset folder) is checked by ``confinement``.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from services.api.bounds import (
    scenario_problem,
)
from services.api.client_keys import client_key_problem, earlier_submission
from services.api.confinement import (
    MAX_NAME_CHARS,
    MAX_VERSION_CHARS,
    confine_manifest,
    dataset_spec,
    manifest_yaml_limits,
)
from services.api.faults import DependencyUnavailable, unavailable_dependency
from services.api.model_registry import find_model, known_model_names
from services.api.observability import UNAVAILABLE
from services.api.rejections import Rejection
from services.api.submission_checks import (
    check_simple_fields,
    invalid,
    run_cap_problem,
    scenario_config,
    workload_choice,
)
from services.api.submission_request import FanOut, Submission
from services.api.submission_targets import (
    constraint_texts,
    gang_of,
    requirement_of,
    target_of,
)
from services.api.user_quota import quota_problem, run_bound_s
from services.core.manifest import ManifestError, ModelManifest, parse_manifest_text
from services.core.manifest_sections import as_fidelity
from services.core.messages import EvaluationRequested
from services.core.scenario import ScenarioConfig
from services.core.workload import Workload
from services.scheduler.agents import find_agent
from services.scheduler.planner import AgentView, UnmetConstraint
from shared import queues
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.settings import Settings
from shared.tracing import tracer

log = logging.getLogger(__name__)


def _resolve_manifest(
    session: Session, settings: Settings, request: Submission, *, viewer_id: int
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


@dataclass(frozen=True)
class _Accepted:
    """A request that passed every check, with what the checks resolved."""

    manifest: ModelManifest
    framework: str
    device: str
    # The constraint terms as stored (the scheduler re-reads them with the manifest's own).
    terms: list[str]
    workload: Workload
    workload_options: dict[str, Any] | None
    dataset: str
    scenario: ScenarioConfig
    agents: list[AgentView]


def submit(
    session: Session,
    settings: Settings,
    publish: Publisher,
    *,
    owner_id: int,
    request: Submission,
    raise_unpublished: bool = False,
) -> Evaluation | FanOut | Rejection:
    """Validate, store the evaluation(s) as QUEUED and ask the scheduler to plan them.

    A fan-out stores one evaluation per matching agent, each pinned to its agent by an
    ``agent=ID`` term, so the scheduler routes each to exactly that worker. A request with
    a client key the owner used before gets what that submission stored, and nothing new.
    When the broker takes no message, the evaluations stay stored for the sweeper; with
    ``raise_unpublished`` the caller then gets DependencyUnavailable("broker") naming
    their ids (submitEvaluation's 503), else them, each with a reason saying so.
    """
    problem = client_key_problem(request.client_key)
    if problem is not None:
        return problem
    earlier = earlier_submission(session, owner_id=owner_id, key=request.client_key)
    if earlier is not None:
        return earlier
    accepted = _accept(session, settings, request, owner_id)
    if isinstance(accepted, Rejection):
        return accepted
    group_id = str(uuid.uuid4()) if request.fan_out else None
    group_info = None
    if request.group is not None:
        group_id = str(request.group["id"])
        group_info = {k: v for k, v in request.group.items() if k != "id"}
    pins = [[f"agent={a.id}"] for a in accepted.agents] if request.fan_out else [[]]
    infos: list[dict[str, Any] | None] = [group_info] * len(pins)
    if request.gang_size is not None:
        gang = gang_of(accepted.agents, request.gang_size, group_info or {}, request.gang_largest)
        if isinstance(gang, Rejection):
            return gang
        pins, infos = gang
    bound = run_bound_s(
        accepted.scenario.model_dump(), accepted.workload.name, settings.max_run_seconds
    )
    over = quota_problem(session, settings, owner_id, [bound] * len(pins))
    if over is not None:
        return over
    evaluations = [
        _evaluation(request, accepted, owner_id, pin, group_id, info)
        for pin, info in zip(pins, infos, strict=True)
    ]
    evaluations[0].client_key = request.client_key
    session.add_all(evaluations)
    # Commit before publishing: the scheduler must find the rows when the messages arrive.
    try:
        session.commit()
    except IntegrityError:
        # Two tries with one client key at once: the first to commit stands.
        session.rollback()
        earlier = earlier_submission(session, owner_id=owner_id, key=request.client_key)
        if earlier is None:
            raise
        return earlier
    # One plan for the lot: the scheduler plans a fan-out's or gang's members together.
    unpublished = _publish_plan(session, publish, evaluations, request.trace_level)
    if unpublished is not None:
        if raise_unpublished:
            raise unpublished  # counted where it is answered (api/schema.py)
        UNAVAILABLE.labels(dependency="broker").inc()
    if (request.fan_out or request.gang_size is not None) and group_id is not None:
        return FanOut(group_id=group_id, evaluations=evaluations)
    return evaluations[0]


def _accept(
    session: Session, settings: Settings, request: Submission, owner_id: int
) -> _Accepted | Rejection:
    """Every check of a request, in the order a client is told of them."""
    manifest = _resolve_manifest(session, settings, request, viewer_id=owner_id)
    if isinstance(manifest, Rejection):
        return manifest
    texts = constraint_texts(request, settings)
    if isinstance(texts, Rejection):
        return texts
    target = target_of(request, manifest, texts)
    if isinstance(target, Rejection):
        return target
    framework, device, texts = target
    problem = check_simple_fields(request, settings, framework, device)
    if problem is not None:
        return problem
    if request.preprocessing is not None:
        manifest = manifest.with_fidelity(as_fidelity(request.preprocessing))
    measurement = workload_choice(request, framework, manifest)
    if isinstance(measurement, Rejection):
        return measurement
    workload, workload_options = measurement
    dataset: str | Rejection = (
        dataset_spec(settings, request.dataset)
        if workload.needs_dataset
        else workload.dataset_label
    )
    if isinstance(dataset, Rejection):
        return dataset
    scenario = scenario_config(request)
    if isinstance(scenario, Rejection):
        return scenario
    too_long = run_cap_problem(scenario, settings.max_run_seconds)
    if too_long is not None:
        return too_long
    out_of_bounds = scenario_problem(scenario, settings)
    if out_of_bounds is not None:
        return invalid(out_of_bounds, "InvalidScenarioSettings")
    need = requirement_of(manifest, framework, device, texts)
    if isinstance(need, Rejection):
        return need
    choice = find_agent(session, settings, need)
    if isinstance(choice, UnmetConstraint):
        return Rejection("NoMatchingAgent", choice.message, field=choice.constraint)
    return _Accepted(
        manifest,
        framework,
        device,
        texts,
        workload,
        workload_options,
        dataset,
        scenario,
        list(choice.agents),
    )


def _evaluation(
    request: Submission,
    accepted: _Accepted,
    owner_id: int,
    pin: list[str],
    group_id: str | None,
    group_info: dict[str, Any] | None,
) -> Evaluation:
    manifest = accepted.manifest
    return Evaluation(
        id=str(uuid.uuid4()),
        owner_id=owner_id,
        model_name=manifest.name,
        model_version=manifest.version,
        manifest=manifest.to_dict(),
        framework=accepted.framework,
        device=accepted.device,
        scenario=accepted.scenario.model_dump(mode="json"),
        batch_size=request.batch_size,
        dataset=accepted.dataset,
        dataset_count=request.samples,
        seed=request.seed,
        trace_level=request.trace_level,
        # Stored as terms only: the scheduler re-reads them with the manifest's own.
        constraints={"require": [*accepted.terms, *pin]},
        backend_options=request.backend_options,
        threads=request.threads,
        workload=accepted.workload.name,
        workload_options=accepted.workload_options,
        group_id=group_id,
        group_info=group_info,
    )


def _publish_plan(
    session: Session, publish: Publisher, evaluations: list[Evaluation], trace_level: str
) -> DependencyUnavailable | None:
    """Ask the scheduler to plan stored evaluations (one submission's: one, or a group's
    members, which it plans together from the first's message); a broker outage leaves
    them to the sweeper, with a reason the client reads, and is returned (None: sent)."""
    first = evaluations[0]
    try:
        # The root of the submission's trace: the scheduler's and workers' spans hang
        # below it through the context the message carries.
        with tracer().start_as_current_span("api.submit_evaluation") as span:
            span.set_attribute("benchstack.evaluation_id", first.id)
            span.set_attribute("benchstack.model", f"{first.model_name}:{first.model_version}")
            span.set_attribute("benchstack.trace_level", trace_level)
            if first.group_id:
                span.set_attribute("benchstack.group_id", first.group_id)
            publish(queues.PLAN_EVALUATION, EvaluationRequested(evaluation_id=first.id), None)
    except Exception as exc:
        # The rows are the outbox: they stay QUEUED and the scheduler's sweeper publishes
        # them once the broker is back. The client gets their ids and a reason that says so.
        log.warning("evaluation %s: publish failed (%s); left to the sweeper", first.id, exc)
        broker_down = unavailable_dependency(exc) == "broker"
        cause = "broker unavailable" if broker_down else "could not publish"
        for evaluation in evaluations:
            evaluation.reason = (
                f"{cause} at submission ({exc.__class__.__name__}); "
                "the scheduler's sweeper dispatches it again"
            )
        session.commit()
        if not broker_down:
            return None
        ids = [evaluation.id for evaluation in evaluations]
        return DependencyUnavailable(
            "broker",
            detail=(
                f"evaluation {', '.join(ids)} is stored and waits for the broker (the "
                "scheduler's sweeper dispatches it); retry with the same clientKey to read "
                "it back, or query it by id"
            ),
            extensions={"evaluationIds": ids},
        )
    return None
