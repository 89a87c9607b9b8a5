"""Evaluations submitted as one group (a sweep, repeats, a find-peak search): storing all
of a group's evaluations or none, and reading a group's members back with their runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from types import ModuleType
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.api.cancellation import cancel_evaluation
from services.api.rejections import Rejection
from services.api.submission import submit
from services.api.submission_request import FanOut, Submission
from services.api.user_quota import campaign_problem
from services.core.campaigns.group import Done, InvalidCampaign, Start
from services.core.campaigns.group import apply as applied
from services.core.workload import GENERIC_OPTIONS_FIELD, Workload
from services.workloads import workloads
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from shared.settings import Settings


def submit_all(
    session: Session,
    settings: Settings,
    publish: Publisher,
    *,
    owner_id: int,
    requests: Sequence[Submission],
) -> list[Evaluation] | Rejection:
    """Store and dispatch each request; all of them or none (a request refused after
    others were stored cancels those)."""
    over = campaign_problem(session, settings, owner_id, requests)
    if over is not None:
        return over
    stored: list[Evaluation] = []
    for request in requests:
        result = submit(session, settings, publish, owner_id=owner_id, request=request)
        if isinstance(result, Rejection):
            for evaluation in stored:
                cancel_evaluation(session, owner_id=owner_id, evaluation_id=evaluation.id)
            return result
        # A pinned request (Submission.gang_size) comes back as its group's evaluations.
        stored.extend(result.evaluations if isinstance(result, FanOut) else [result])
    return stored


def one_evaluation_problem(base: Submission, what: str) -> Rejection | None:
    """Repeats, a sweep, the pair and find-peak each run one model on LoadGen (its
    workload's ``runs_scenario``): ``what`` says how; the message names the others."""
    known = workloads().get(base.workload)
    if base.fan_out or known is None or not known.runs_scenario:
        names = sorted(w.options_field for w in workloads().values() if not w.runs_scenario)
        others = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
        return Rejection(
            "InvalidInput",
            f"evaluation: {what}; fanOut, {others} are not accepted",
            field="evaluation",
        )
    return None


def apply(base: Submission, start: Start) -> Submission:
    """``base`` (its settings an object) as the member ``start`` runs it, as the embedded
    launcher applies it (core/campaigns/group.apply), pinned where it says so."""
    # gang_size 1: the first matching agent, so the members run on one system.
    gang_size = 1 if start.pinned else base.gang_size
    return replace(applied(base, start), gang_size=gang_size)


def submit_campaign(
    session: Session,
    settings: Settings,
    publish: Publisher,
    owner_id: int,
    base: Submission,
    what: str,
    first: Callable[[], list[Start] | Done[Any]],
) -> tuple[str, list[Evaluation]] | Rejection:
    """A campaign of one model on LoadGen whose members all start at once (``what``: how
    it runs it; ``first``: its first step, or InvalidCampaign), each applied to ``base``,
    stored and dispatched all or none."""
    problem = one_evaluation_problem(base, what)
    if problem is not None:
        return problem
    if not isinstance(base.settings, dict):
        return Rejection("InvalidInput", "settings: must be an object", field="settings")
    try:
        starts = first()
    except InvalidCampaign as invalid:
        return refused(invalid)
    assert isinstance(starts, list)  # nothing has finished: every member starts
    requests = [apply(base, start) for start in starts]
    stored = submit_all(session, settings, publish, owner_id=owner_id, requests=requests)
    return stored if isinstance(stored, Rejection) else (str(starts[0].group["id"]), stored)


def refused(invalid: InvalidCampaign) -> Rejection:
    """A campaign's refusal (services/core/campaigns) as the API returns it."""
    return Rejection("InvalidInput", str(invalid), field=invalid.field, accepted=invalid.accepted)


def submit_planned(
    kind: ModuleType,
    session: Session,
    settings: Settings,
    publish: Publisher,
    owner_id: int,
    base: Submission,
    asked: Any,
    what: str,
) -> tuple[str, list[Evaluation]] | Rejection:
    """A kind of services/core/campaigns whose members all start at once (repeats, sweep,
    the pair): ``asked`` (its ``Asked``) planned over ``base``'s scenario settings."""

    def first() -> list[Start] | Done[Any]:
        members = asked.plan(base.scenario, base.named_settings)
        return kind.next_step(members, [])

    return submit_campaign(session, settings, publish, owner_id, base, what, first)


def group_members(
    session: Session, group_id: str, kind: str, *, owner_id: int | None = None
) -> list[tuple[Evaluation, Run | None]]:
    """The group's evaluations of ``kind`` in the order they were submitted, each with its
    run once stored; ``owner_id``: only that user's."""
    query = select(Evaluation).where(Evaluation.group_id == group_id)
    if owner_id is not None:
        query = query.where(Evaluation.owner_id == owner_id)
    # populate_existing: a caller that changed a member's state with a compare-and-set
    # UPDATE (the aggregator) holds the row in its session as it was before.
    ordered = query.order_by(Evaluation.created_at).execution_options(populate_existing=True)
    evaluations = session.scalars(ordered).all()
    members = [e for e in evaluations if (e.group_info or {}).get("kind") == kind]
    runs = {
        run.evaluation_id: run
        for run in session.scalars(
            select(Run).where(Run.evaluation_id.in_([e.id for e in members]))
        ).all()
    }
    return [(e, runs.get(e.id)) for e in members]


# A group that submits its members one after another (a find-peak search, a training
# scaling) keeps the request it was made from in each member's group, and says there why
# it stopped when a next member was refused (the agent left).


def stored_request(base: Submission) -> dict[str, Any]:
    """``base`` as a group keeps it, to submit the next members from: without its group
    and pinning, scenario settings in snake_case."""
    stored = base.stored()
    stored.pop("gang_size")
    stored.pop("gang_largest")
    # A client key names one submission: the members submitted later are new ones.
    stored.pop("client_key")
    return stored


def request_of(evaluation: Evaluation) -> Submission:
    """The request the member's group was made from (``stored_request``)."""
    stored = dict((evaluation.group_info or {})["request"])
    workloads = [(str(name), options) for name, options in stored.pop("workloads", [])]
    # Groups stored before migration 0011 kept a key per kind of measurement with a typed
    # input of its own (bricks, training), named as that input.
    for workload in typed_inputs():
        key = workload.options_field
        if stored.get(key) is not None:
            workloads.append((workload.name, stored[key]))
        stored.pop(key, None)
    return Submission(**stored, workloads=tuple(workloads))


def typed_inputs() -> list[Workload]:
    """The workloads whose options have a GraphQL input of their own (Workload.options_field)."""
    return [w for w in workloads().values() if w.options_field != GENERIC_OPTIONS_FIELD]


def stop_group(session: Session, evaluation: Evaluation, why: str) -> None:
    """Record on ``evaluation`` (the member whose run asked for the next one) why the group
    could not go on; ``stopped_reason`` reads it back."""
    evaluation.group_info = {**(evaluation.group_info or {}), "stopped": why}
    session.commit()


def stopped_reason(members: Sequence[tuple[Evaluation, Run | None]]) -> str:
    """Why the group stopped (``stop_group``); empty when it did not."""
    infos = [e.group_info or {} for e, _ in members]
    return next((str(info["stopped"]) for info in infos if "stopped" in info), "")
