"""Queries of the evaluations domain. A user sees only their own evaluations."""

from __future__ import annotations

import re

import strawberry
from sqlalchemy import func, select
from sqlalchemy.orm import Session
from strawberry.types.nodes import SelectedField

from services.api.context import ApiDeps, read_on_loop
from services.api.graphql.evaluations.types import (
    EvaluationPage,
    EvaluationStateType,
    EvaluationType,
    RunType,
    load_runs,
    runs_of,
)
from shared.db import liveness
from shared.db.evaluations import Evaluation
from shared.db.worker_repo import NEXT_WORKER, waiting_reason
from shared.settings import Settings

MAX_PAGE = 200
# A decimal offset of at most 18 digits: always within a 64-bit integer.
CURSOR_RE = re.compile(r"[0-9]{1,18}")


@strawberry.input
class EvaluationFilter:
    model: str | None = None
    framework: str | None = None
    # Substring of the agent id (hostname/queue/pid), e.g. a hostname.
    agent: str | None = None
    status: EvaluationStateType | None = None


def parse_cursor(after: str | None) -> int | None:
    """The offset a cursor stands for: 0 without one, None for one this API never made.

    Cursors are decimal offsets; anything else (letters, a sign, digits beyond any real
    page such as "99999999999999999999") must not reach SQL, where it is out of range."""
    if not after:
        return 0
    if not CURSOR_RE.fullmatch(after):
        return None
    return int(after)


def _page(
    deps: ApiDeps, owner_id: int, where: EvaluationFilter | None, first: int, offset: int | None
) -> EvaluationPage:
    query = select(Evaluation).where(Evaluation.owner_id == owner_id)
    if where is not None:
        if where.model:
            query = query.where(Evaluation.model_name == where.model)
        if where.framework:
            query = query.where(Evaluation.framework == where.framework)
        if where.agent:
            query = query.where(Evaluation.agent_id.contains(where.agent))
        if where.status:
            query = query.where(Evaluation.state == where.status.value)
    with deps.read_db() as session:
        total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
        if offset is None or offset >= total:
            # Past the end, or a cursor this API never made: an empty last page.
            return EvaluationPage(items=[], total_count=total, next_cursor=None)
        rows = session.scalars(
            query.order_by(Evaluation.created_at.desc(), Evaluation.id).offset(offset).limit(first)
        )
        items = [
            EvaluationType.from_row(r, waiting=waiting_reason_of(session, deps.settings, r))
            for r in rows
        ]
    end = offset + len(items)
    return EvaluationPage(
        items=items, total_count=total, next_cursor=str(end) if end < total else None
    )


def waiting_reason_of(session: Session, settings: Settings, row: Evaluation) -> str:
    """Why an unfinished evaluation is not moving, when no live worker can take it."""
    if row.reason or row.state not in NEXT_WORKER:
        return ""
    # The app's settings, not get_settings(): building Settings reads the environment
    # each time, once per row of a page.
    return waiting_reason(session, row, live_within_s=liveness.live_within_s(session, settings))


def _one(deps: ApiDeps, owner_id: int, evaluation_id: str) -> EvaluationType | None:
    return _one_with_runs(deps, owner_id, evaluation_id, with_runs=False)[0]


def _one_with_runs(
    deps: ApiDeps, owner_id: int, evaluation_id: str, with_runs: bool
) -> tuple[EvaluationType | None, list[RunType]]:
    """The evaluation, and its runs when ``with_runs`` (in the same session)."""
    with deps.read_db() as session:
        row = session.get(Evaluation, evaluation_id)
        # Someone else's evaluation is indistinguishable from a missing one.
        if row is None or row.owner_id != owner_id:
            return None, []
        runs = runs_of(session, [row.id])[0] if with_runs else []
        found = EvaluationType.from_row(row, waiting=waiting_reason_of(session, deps.settings, row))
        return found, runs


def selects_runs(info: strawberry.Info) -> bool:
    """Whether the operation asks for this field's ``runs`` directly (not via a fragment:
    those are loaded by the runs loader as before)."""
    return any(
        isinstance(selection, SelectedField) and selection.name == "runs"
        for field in info.selected_fields
        for selection in field.selections
    )


@strawberry.type
class EvaluationQueries:
    @strawberry.field
    async def evaluations(
        self,
        info: strawberry.Info,
        where: EvaluationFilter | None = None,
        first: int = 20,
        after: str | None = None,
    ) -> EvaluationPage:
        owner = info.context.require_user()
        first = max(1, min(first, MAX_PAGE))
        return await read_on_loop(
            _page, info.context.deps, owner, where, first, parse_cursor(after)
        )

    @strawberry.field
    async def evaluation(self, info: strawberry.Info, id: str) -> EvaluationType | None:
        owner = info.context.require_user()
        # With its runs asked for, one trip to a worker thread and one session instead of
        # two (the runs loader would take a second): the loader is primed with them.
        with_runs = selects_runs(info)
        found, runs = await read_on_loop(_one_with_runs, info.context.deps, owner, id, with_runs)
        if found is not None and with_runs:
            info.context.loader(load_runs).prime(found.id, runs)
        return found
