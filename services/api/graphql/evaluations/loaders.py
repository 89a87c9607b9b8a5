"""Batch loaders of the evaluations domain (wrapped in per-request DataLoaders)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.api.graphql.evaluations.types import RunType
from shared.db.models import Run

if TYPE_CHECKING:
    from services.api.context import ApiDeps


def load_runs(deps: ApiDeps, evaluation_ids: list[str]) -> list[list[RunType]]:
    """Runs of each evaluation, in the order of the ids asked for (one query for all)."""
    with deps.read_db() as session:
        return runs_of(session, evaluation_ids)


def runs_of(session: Session, evaluation_ids: list[str]) -> list[list[RunType]]:
    """As load_runs, in a session the caller holds (to prime the loader with no second trip
    to the database)."""
    rows = session.scalars(
        select(Run).where(Run.evaluation_id.in_(evaluation_ids)).order_by(Run.created_at)
    )
    by_evaluation: dict[str, list[RunType]] = {i: [] for i in evaluation_ids}
    for row in rows:
        if row.evaluation_id is not None:
            by_evaluation[row.evaluation_id].append(RunType.from_row(row))
    return [by_evaluation[i] for i in evaluation_ids]
