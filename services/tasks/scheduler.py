"""scheduler.plan_evaluation: pick the agent queue, plan shards, start preprocessing.

Messages are published only after the transaction commits: a worker that receives one
must find the rows it refers to. If the worker dies between the commit and the publish
(or a broker restart drops the message), a redelivery or the sweeper's re-dispatch
(services/scheduler/sweeper.py) finds the state this task produced and publishes again
what that state is waiting for: PreprocessShard for the shards not ready
(content-addressed, so a duplicate does no work twice), RunInference while the run's
claim is free (the inference task deduplicates by its claim), or the stored RunCompleted
of an evaluation in AGGREGATING.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from sqlalchemy import select
from sqlalchemy.orm import Session

from services.core.constraints import ConstraintError
from services.core.dispatch import PlannedShard, inference_message, run_id_for, shard_message
from services.core.manifest import ManifestError, parse_manifest
from services.core.messages import EvaluationRequested, Message
from services.inference.measurement import outcome_key, stored_completion
from services.preprocess.datasets import DatasetError, resolve_dataset
from services.scheduler.agents import requirement_for
from services.scheduler.fair_order import FairGate
from services.scheduler.pending import measure_lost_again, pending_inference
from services.scheduler.plan_lookups import PlanLookups
from services.scheduler.planner import UnmetConstraint, plan_shards
from services.workloads import workload_named
from shared import queues, worker_context
from shared.db import evaluation_repo
from shared.db.evaluations import Evaluation, Shard
from shared.db.states import EvaluationState
from shared.request_spans import EVALUATION_ATTRIBUTE
from shared.runtime import Resources
from shared.settings import Settings
from shared.task_guard import RETRY_OPTIONS, fail_evaluation_on_error
from shared.tracing import tracer
from shared.worker_context import WorkerContext

log = logging.getLogger(__name__)

# Messages to publish once the plan's transaction committed: (task, message, queue).
Outbox = list[tuple[str, Message, str | None]]
# The most members of one group planned in one transaction beside the one asked for: a
# fan-out has one member per live agent; the rest of a larger one are planned by the
# sweeper's re-dispatch.
MAX_GROUP_PLANNED = 1000


def plan(evaluation_id: str, context: WorkerContext) -> None:
    outbox: Outbox = []
    _plan(context.resources, evaluation_id, outbox)
    # The whole outbox in one round trip to the broker (a group's members' too): published
    # one by one, a fan-out of 200 took 0.9-3.4 s on a loaded host (docs/scale.md).
    with context.batch() as publish:
        for item in outbox:
            member = _member(item, evaluation_id)
            if member == evaluation_id:
                publish(*item)
                continue
            # Under a span of the member's own, so its record holds the scheduler's part.
            with tracer().start_as_current_span("scheduler.plan_member") as span:
                span.set_attribute(EVALUATION_ATTRIBUTE, member)
                publish(*item)


def _member(item: tuple[str, Message, str | None], default: str) -> str:
    return str(getattr(item[1], "evaluation_id", default))


def _plan(resources: Resources, evaluation_id: str, outbox: Outbox) -> None:
    with resources.db() as session:
        # Locked for the whole plan: two deliveries at once (a redelivery, a sweeper's
        # re-dispatch) plan one after the other, and the second sees what the first did.
        evaluation = session.get(Evaluation, evaluation_id, with_for_update=True)
        if evaluation is None:
            log.info("evaluation %s does not exist; nothing to plan", evaluation_id)
            return
        if evaluation.state == EvaluationState.PREPROCESSING.value:
            _resume_preprocessing(resources.settings, session, evaluation, outbox)
        elif evaluation.state == EvaluationState.RUNNING.value:
            pending = pending_inference(session, evaluation, resources.settings)
            if pending is not None:
                log.info("evaluation %s: publishing RunInference again", evaluation_id)
                outbox.append((queues.RUN_INFERENCE, *pending))
        elif evaluation.state == EvaluationState.AGGREGATING.value:
            _resend_completion(resources, session, evaluation, outbox)
        elif evaluation.state == EvaluationState.QUEUED.value:
            lookups = PlanLookups(session, resources.settings, resources.store)
            gate = FairGate(session, resources.settings)
            members = [evaluation, *_queued_members(session, evaluation)]
            for queued in members:
                _plan_queued(lookups, gate, session, queued, outbox)
            if len(members) > 1:
                log.info("group %s: planned %d members together", evaluation.group_id, len(members))
        else:
            log.info("evaluation %s is %s; nothing to plan", evaluation_id, evaluation.state)


def _resend_completion(
    resources: Resources, session: Session, evaluation: Evaluation, outbox: Outbox
) -> None:
    """AGGREGATING: the run's RunCompleted, rebuilt from the store (it may have been lost);
    with the measurement itself lost (an emptied bucket), the run measured again."""
    completed = stored_completion(resources.store, evaluation)
    if completed is None:
        again = measure_lost_again(
            session, evaluation, outcome_key(evaluation), resources.settings, who="scheduler"
        )
        if again is not None:
            outbox.append((queues.RUN_INFERENCE, *again))
        return
    log.info("evaluation %s: publishing RunCompleted again", evaluation.id)
    outbox.append((queues.RUN_COMPLETED, completed, None))


def _plan_queued(
    lookups: PlanLookups, gate: FairGate, session: Session, evaluation: Evaluation, outbox: Outbox
) -> None:
    """QUEUED: pick the agent's queue, then plan the dataset's shards or, for a workload
    that reads none, go straight to the run."""
    try:
        need = requirement_for(evaluation)
    except ConstraintError as exc:
        evaluation_repo.fail(session, evaluation.id, str(exc))
        return
    choice = lookups.find_agent(need)
    if isinstance(choice, UnmetConstraint):
        # The API found an agent at submission; none is live now (a restart, a database
        # outage that aged every heartbeat). Wait: the sweeper plans it again, and fails
        # it only after MAX_DISPATCHES tries, with this reason.
        evaluation.reason = f"waiting for an agent: {choice.message}"
        return
    waits = gate.hold(evaluation, choice.queue)  # users take turns (fair_order.py)
    if waits is not None:
        evaluation.reason = waits
        return
    if not workload_named(evaluation.workload).needs_dataset:
        # A workload that reads no dataset (DLBricks, training): nothing to preprocess.
        _start_without_dataset(evaluation, choice.queue, outbox)
        return
    key = (evaluation.dataset, evaluation.dataset_count, evaluation.seed)
    try:
        manifest = parse_manifest(evaluation.manifest)
        dataset = lookups.dataset(key)
    except (ManifestError, DatasetError) as exc:
        evaluation_repo.fail(session, evaluation.id, str(exc))
        return
    spec = manifest.inputs[0]
    shards = lookups.shards(key, spec)
    lookups.record_dataset(key, dataset)
    done = [lookups.is_complete(s.key) for s in shards]
    spec_json = spec.model_dump(mode="json")
    _start_shards(session, evaluation, shards, done, spec_json, choice.queue, outbox)


def _queued_members(session: Session, evaluation: Evaluation) -> list[Evaluation]:
    """The other QUEUED evaluations of ``evaluation``'s fan-out or gang, locked: the API
    asks for one plan per group, and the group is planned in one transaction. Rows another
    plan holds are skipped (it plans them); at most MAX_GROUP_PLANNED, oldest first."""
    if not evaluation.group_id:
        return []
    return list(
        session.scalars(
            select(Evaluation)
            .where(
                Evaluation.group_id == evaluation.group_id,
                Evaluation.state == EvaluationState.QUEUED.value,
                Evaluation.id != evaluation.id,
            )
            .order_by(Evaluation.created_at, Evaluation.id)
            .limit(MAX_GROUP_PLANNED)
            .with_for_update(skip_locked=True)
        )
    )


def _start_shards(
    session: Session,
    evaluation: Evaluation,
    shards: list[PlannedShard],
    done: list[bool],
    spec_json: dict[str, Any],
    queue: str,
    outbox: Outbox,
) -> None:
    """Store the planned shards, QUEUED -> PREPROCESSING, and publish those not stored
    yet (``done`` says which are); when every one is (content-addressed, reused),
    straight on to RUNNING."""
    for shard, ready in zip(shards, done, strict=True):
        session.add(
            Shard(
                evaluation_id=evaluation.id,
                index=shard.index,
                key=shard.key,
                sample_count=len(shard.sample_ids),
                ready=ready,
                reused=ready,
            )
        )
    evaluation.run_id = evaluation.run_id or run_id_for(evaluation.id)
    # The row is locked (by _plan): the changes go out with the group's others at commit.
    if not evaluation_repo.transition_locked(
        evaluation,
        EvaluationState.PREPROCESSING,
        shards_total=len(shards),
        shards_ready=sum(done),
        preprocess_reused=all(done),
        queue=queue,
    ):
        return
    if all(done):
        if evaluation_repo.transition_locked(evaluation, EvaluationState.RUNNING):
            keys = [s.key for s in shards]
            outbox.append((queues.RUN_INFERENCE, inference_message(evaluation, keys), queue))
        return
    for shard, ready in zip(shards, done, strict=True):
        if not ready:
            outbox.append(
                (queues.PREPROCESS_SHARD, shard_message(evaluation, shard, spec_json), None)
            )


def _start_without_dataset(
    evaluation: Evaluation,
    queue: str,
    outbox: Outbox,
) -> None:
    """QUEUED -> PREPROCESSING (no shards) -> RUNNING, and RunInference to the agent."""
    evaluation.run_id = evaluation.run_id or run_id_for(evaluation.id)
    moved = evaluation_repo.transition_locked(
        evaluation, EvaluationState.PREPROCESSING, shards_total=0, shards_ready=0, queue=queue
    )
    if moved and evaluation_repo.transition_locked(evaluation, EvaluationState.RUNNING):
        outbox.append((queues.RUN_INFERENCE, inference_message(evaluation, []), queue))


def _resume_preprocessing(
    settings: Settings, session: Session, evaluation: Evaluation, outbox: Outbox
) -> None:
    """A redelivery after the plan committed: publish the shards not ready yet again.

    Planning is deterministic (dataset, count, seed, spec), so the shards planned again are
    the rows stored then."""
    try:
        manifest = parse_manifest(evaluation.manifest)
        dataset = resolve_dataset(
            evaluation.dataset,
            count=evaluation.dataset_count,
            seed=evaluation.seed,
            cache_dir=settings.data_dir,
        )
    except (ManifestError, DatasetError) as exc:
        evaluation_repo.fail(session, evaluation.id, str(exc))
        return
    spec = manifest.inputs[0]
    spec_json = spec.model_dump(mode="json")
    stored = {s.index: s for s in evaluation.shards}
    for shard in plan_shards(dataset.samples, spec, shard_samples=settings.shard_samples):
        row = stored.get(shard.index)
        if row is None or row.key != shard.key:
            evaluation_repo.fail(
                session,
                evaluation.id,
                f"scheduler: shard {shard.index} planned again differs from the stored plan",
            )
            outbox.clear()
            return
        if not row.ready:
            outbox.append(
                (queues.PREPROCESS_SHARD, shard_message(evaluation, shard, spec_json), None)
            )
    log.info("evaluation %s: publishing %d shard(s) again", evaluation.id, len(outbox))


@shared_task(name=queues.PLAN_EVALUATION, **RETRY_OPTIONS)
@fail_evaluation_on_error("scheduler")
def plan_evaluation(payload: dict[str, Any]) -> None:
    evaluation_id = EvaluationRequested.model_validate(payload).evaluation_id
    plan(evaluation_id, worker_context.current())
