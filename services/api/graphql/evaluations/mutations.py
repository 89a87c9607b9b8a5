"""Mutations of the evaluations domain; bad input comes back as a typed error, not a 500."""

from __future__ import annotations

from typing import Annotated, Any

import strawberry
from strawberry.scalars import JSON

from services.api.cancellation import GroupCancellation, cancel_evaluation, cancel_group
from services.api.context import ApiDeps, in_thread
from services.api.fan_out import load_comparison
from services.api.graphql.comparisons.types import ComparisonType
from services.api.graphql.errors import (
    AlreadyFinished,
    InvalidInput,
    InvalidManifest,
    InvalidScenarioSettings,
    LimitExceeded,
    NoMatchingAgent,
    NotFound,
    UnknownModel,
    cancel_refusal,
    from_rejection,
)
from services.api.graphql.evaluations.types import EvaluationType
from services.api.graphql.workload_fields import options_given, with_option_inputs
from services.api.observability import REJECTIONS, SUBMISSIONS
from services.api.rejections import Rejection
from services.api.submission import submit
from services.api.submission_request import FanOut, Submission

# A fan-out (fanOut: true) answers with the Comparison its evaluations make up.
SubmitEvaluationResult = Annotated[
    EvaluationType
    | ComparisonType
    | UnknownModel
    | InvalidScenarioSettings
    | NoMatchingAgent
    | InvalidManifest
    | InvalidInput
    | LimitExceeded,
    strawberry.union("SubmitEvaluationResult"),
]
CancelEvaluationResult = Annotated[
    EvaluationType | NotFound | AlreadyFinished, strawberry.union("CancelEvaluationResult")
]


@strawberry.type(name="GroupCancelled")
class GroupCancelledType:
    group_id: str
    # Members moved to CANCELLED by this call, and those that had already ended.
    cancelled: list[str]
    already_finished: list[str]

    @classmethod
    def from_cancellation(cls, found: GroupCancellation) -> GroupCancelledType:
        return cls(
            group_id=found.group_id,
            cancelled=list(found.cancelled),
            already_finished=list(found.already_finished),
        )


CancelGroupResult = Annotated[GroupCancelledType | NotFound, strawberry.union("CancelGroupResult")]


@strawberry.input
class AgentConstraints:
    # Terms that must all hold, e.g. ["onnxruntime>=1.20", "arch=x86_64", "gpu"]:
    # <framework>[specifier], arch=, gpu / !gpu / gpu=NAME, device=, host=, memory>=16GiB,
    # threads=N, cores>=N, agent=ID (the language: services/core/constraints.py).
    require: list[str] | None = None
    # PEP 440 specifier on the agent's framework version, e.g. ">=2.1".
    framework_version: str | None = None
    hostname: str | None = None


@strawberry.input
@with_option_inputs
class SubmitEvaluationInput:
    model: str | None = None
    version: str | None = None
    # An inline manifest (YAML) instead of a registered or catalogue model.
    manifest: str | None = None
    # The backend to run; defaults to the manifest's framework ("null" measures the harness).
    framework: str | None = None
    # Default: the device a "device=" constraint names, else "cpu".
    device: str | None = None
    scenario: str = "offline"
    # ScenarioConfig fields, snake_case or camelCase: {"minDurationS": 0.5, "targetQps": 100}.
    settings: JSON | None = None
    batch_size: int = 1
    dataset: str = "synthetic"
    samples: int | None = 64
    seed: int = 0
    trace_level: str = "NONE"
    # Input.fidelity for the model's inputs: "reference" (torchvision's bits) or "fast"
    # (the same decoded pixels, torch's 8-bit resize); null: the manifest's own.
    preprocessing: str | None = None
    constraints: AgentConstraints | None = None
    backend_options: JSON | None = None
    # Intra-op threads for this evaluation, over the agent's own setting (1..256); null:
    # the agent's setting, else chosen for the scenario and the free CPUs.
    threads: int | None = None
    # Run on every live agent that satisfies the constraints, one evaluation each; the
    # result is a Comparison, also readable later with compare(groupId).
    fan_out: bool = False
    # Each workload's typed options, one field per workload that declares an input
    # (services/workloads/<name>/, e.g. `training: {steps: 50}`), added here before
    # `workload` (graphql/workload_fields.py). Else any kind of measurement by its name
    # ("loadgen", "bricks", "training", ...) with its options as JSON. Neither: a LoadGen
    # run on the dataset.
    workload: str | None = None
    workload_options: JSON | None = None
    # An idempotency key for this submission (1-100 of A-Z a-z 0-9 . _ : ~ -, a UUID say):
    # a retry with the same key by the same user answers what the first try stored and
    # stores nothing more. Send one, and the same one on each retry, whenever a submission
    # may be retried (the CLI does). submitEvaluation's only: campaigns ignore it.
    client_key: str | None = None


def workloads_of(data: SubmitEvaluationInput) -> tuple[tuple[str, Any], ...]:
    """Every kind of measurement the input names, with its options."""
    named = options_given(data)
    # ``workload`` naming the kind whose typed input is given says it once more, not twice.
    restated = data.workload_options is None and data.workload in {name for name, _ in named}
    if data.workload is not None and not restated:
        named.append((data.workload, data.workload_options))
    return tuple(named)


def to_request(data: SubmitEvaluationInput, *, keyed: bool = False) -> Submission:
    """The service's request; ``keyed``: with the input's clientKey (submitEvaluation's
    own; a campaign's members are each a submission of their own, so it ignores it)."""
    constraints: dict[str, Any] = {}
    if data.constraints is not None:
        if data.constraints.framework_version:
            constraints["framework_version"] = data.constraints.framework_version
        if data.constraints.hostname:
            constraints["hostname"] = data.constraints.hostname
        if data.constraints.require:
            constraints["require"] = list(data.constraints.require)
    return Submission(
        model=data.model,
        version=data.version,
        manifest_yaml=data.manifest,
        framework=data.framework,
        device=data.device,
        scenario=data.scenario,
        settings=data.settings if data.settings is not None else {},
        batch_size=data.batch_size,
        dataset=data.dataset,
        samples=data.samples,
        seed=data.seed,
        trace_level=data.trace_level,
        preprocessing=data.preprocessing,
        constraints=constraints,
        backend_options=data.backend_options if data.backend_options is not None else {},
        threads=data.threads,
        fan_out=data.fan_out,
        workloads=workloads_of(data),
        client_key=data.client_key if keyed else None,
    )


def _submit(
    deps: ApiDeps, owner_id: int, request: Submission
) -> EvaluationType | ComparisonType | Rejection:
    with deps.db() as session:
        # A broker outage raises (HTTP 503 naming the stored evaluations' ids).
        result = submit(
            session,
            deps.settings,
            deps.publish,
            owner_id=owner_id,
            request=request,
            raise_unpublished=True,
        )
        if isinstance(result, Rejection):
            return result
        if isinstance(result, FanOut):
            comparison = load_comparison(session, owner_id=owner_id, group_id=result.group_id)
            if comparison is None:  # submit committed it in this very session
                raise RuntimeError(f"fan-out {result.group_id} vanished after its commit")
            return ComparisonType.from_comparison(comparison)
        return EvaluationType.from_row(result)


def _cancel_group(deps: ApiDeps, owner_id: int, group_id: str) -> GroupCancelledType | Rejection:
    with deps.db() as session:
        found = cancel_group(session, owner_id=owner_id, group_id=group_id)
        if isinstance(found, Rejection):
            return found
        return GroupCancelledType.from_cancellation(found)


def _cancel(deps: ApiDeps, owner_id: int, evaluation_id: str) -> EvaluationType | Rejection:
    with deps.db() as session:
        result = cancel_evaluation(session, owner_id=owner_id, evaluation_id=evaluation_id)
        if isinstance(result, Rejection):
            return result
        return EvaluationType.from_row(result)


@strawberry.type
class EvaluationMutations:
    @strawberry.mutation
    async def submit_evaluation(
        self, info: strawberry.Info, input: SubmitEvaluationInput
    ) -> SubmitEvaluationResult:
        owner = info.context.require_user()
        request = to_request(input, keyed=True)
        result = await in_thread(_submit, info.context.deps, owner, request)
        if isinstance(result, Rejection):
            REJECTIONS.labels(result.kind).inc()
            return from_rejection(result)
        SUBMISSIONS.inc()
        return result

    @strawberry.mutation
    async def cancel_evaluation(self, info: strawberry.Info, id: str) -> CancelEvaluationResult:
        owner = info.context.require_user()
        result = await in_thread(_cancel, info.context.deps, owner, id)
        if isinstance(result, Rejection):
            return cancel_refusal(result)
        return result

    @strawberry.mutation(
        description="Cancel every unfinished evaluation of a group (fan-out, sweep, "
        "find-peak, repeats, ...) and stop it submitting more."
    )
    async def cancel_group(self, info: strawberry.Info, group_id: str) -> CancelGroupResult:
        owner = info.context.require_user()
        result = await in_thread(_cancel_group, info.context.deps, owner, group_id)
        if isinstance(result, Rejection):
            return NotFound(message=result.message, field=result.field)
        return result
