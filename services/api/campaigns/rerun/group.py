"""A rerun submitted through the API: the owner's stored run submitted again, ``repeats``
times, with the request its evaluation stored, as one group; read back with the verdict of
services/core/campaigns/rerun.py once every rerun is stored (``benchstack rerun`` is the
other launcher of the same campaign).

The constraints are the evaluation's own, the agent it was pinned to included: a rerun
asks whether the same system gives the same figures.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from services.aggregator.repository import RunNotFound, get_run
from services.api.campaigns.groups import (
    group_members,
    submit_campaign,
)
from services.api.rejections import Rejection
from services.api.submission_request import Submission
from services.core.campaigns import rerun
from services.core.campaigns.group import Done, Start
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from shared.settings import Settings

KIND = rerun.KIND


@dataclass(frozen=True)
class RerunView:
    group_id: str
    original: Run
    members: list[tuple[Evaluation, Run | None]]
    # None until every rerun is stored.
    verdict: rerun.RerunVerdict | None


def request_of_run(evaluation: Evaluation) -> Submission:
    """The request ``evaluation`` stored, as a client would submit it again."""
    settings = {k: v for k, v in evaluation.scenario.items() if v is not None}
    scenario = str(settings.pop("scenario"))
    options = evaluation.workload_options
    return Submission(
        model=evaluation.model_name,
        version=evaluation.model_version,
        framework=evaluation.framework,
        device=evaluation.device,
        scenario=scenario,
        settings=settings,
        batch_size=evaluation.batch_size,
        dataset=evaluation.dataset,
        samples=evaluation.dataset_count,
        seed=evaluation.seed,
        trace_level=evaluation.trace_level,
        constraints=dict(evaluation.constraints),
        backend_options=dict(evaluation.backend_options),
        threads=evaluation.threads,
        workloads=() if options is None else ((evaluation.workload, options),),
    )


def _owned_run(session: Session, owner_id: int, run_ref: str) -> Evaluation | Rejection:
    try:
        run = get_run(session, run_ref)
    except RunNotFound as missing:
        return Rejection("InvalidInput", f"runId: {missing}", field="runId")
    evaluation = session.get(Evaluation, run.evaluation_id) if run.evaluation_id else None
    if evaluation is None or evaluation.owner_id != owner_id:
        return Rejection(
            "InvalidInput", f"runId: {run_ref!r} is none of your evaluations' runs", "runId"
        )
    return evaluation


def submit_rerun(
    session: Session,
    settings: Settings,
    publish: Publisher,
    *,
    owner_id: int,
    run_id: str,
    repeats: int,
) -> tuple[str, list[Evaluation]] | Rejection:
    """Store and dispatch ``repeats`` reruns of the owner's run; all or none."""
    evaluation = _owned_run(session, owner_id, run_id)
    if isinstance(evaluation, Rejection):
        return evaluation
    base, of = request_of_run(evaluation), str(evaluation.run_id)

    def first() -> list[Start]:
        return [member.start() for member in rerun.plan(of, repeats)]

    what = "a rerun compares one LoadGen run"
    return submit_campaign(session, settings, publish, owner_id, base, what, first)


def load_rerun(session: Session, *, owner_id: int, group_id: str) -> RerunView | None:
    """The owner's reruns in order, with the verdict once all are stored."""
    members = group_members(session, group_id, KIND, owner_id=owner_id)
    if not members:
        return None
    records = [rerun.RerunMember.read(e.group_info or {}, group_id) for e, _ in members]
    original = session.get(Run, records[0].of)
    if original is None:
        return None
    step = rerun.next_step(
        records,
        [run.report for _, run in members if run is not None],
        original=original.report,
        original_environment=original.environment,
    )
    members.sort(key=lambda m: rerun.RerunMember.read(m[0].group_info or {}, group_id).index)
    verdict = step.summary if isinstance(step, Done) else None
    return RerunView(group_id, original, members, verdict)
