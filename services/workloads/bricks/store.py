"""Brick figures in the database (shared/db/bricks.py): what the stack's agents measured,
read back per system, so any later model reuses every brick a system already has."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.workloads.bricks.results import SystemResults
from shared.db.bricks import BrickRecipe, BrickSystem, BrickTiming
from shared.db.clock import utcnow


def input_shape_key(shape: list[int]) -> str:
    return "x".join(str(int(side)) for side in shape)


def system_results(session: Session, system: str) -> SystemResults:
    """Every brick timing, the floor and the memory read stored for ``system``."""
    rows = session.scalars(select(BrickTiming).where(BrickTiming.system == system)).all()
    row = session.get(BrickSystem, system)
    return SystemResults(
        system,
        {row.signature: dict(row.timing) for row in rows},
        dict(row.floor) if row is not None else None,
        memory=dict(row.memory) if row is not None and row.memory is not None else None,
    )


def known_systems(session: Session) -> list[str]:
    return list(session.scalars(select(BrickSystem.system).order_by(BrickSystem.system)).all())


def save_measured(
    session: Session,
    system: str,
    timings: dict[str, dict[str, Any]],
    floor: dict[str, Any] | None,
    evaluation_id: str | None,
    memory: dict[str, Any] | None = None,
) -> int:
    """Store the timings a run measured; a brick already stored for the system keeps its
    first figure (two agents of one system racing measure the same brick twice: either
    figure is that system's), and so does the memory read. Returns how many were new."""
    rows = [
        {
            "signature": signature,
            "system": system,
            "timing": timing,
            "evaluation_id": evaluation_id,
            "measured_at": utcnow(),
        }
        for signature, timing in timings.items()
    ]
    new = _insert_new(session, rows) if rows else 0
    if floor is not None:
        row = session.get(BrickSystem, system)
        if row is None:
            session.add(BrickSystem(system=system, floor=floor, memory=memory, updated_at=utcnow()))
        else:
            # The floor is re-measured with every run: the latest is the one the new
            # bricks' figures were taken beside.
            row.floor = floor
            row.memory = row.memory or memory
            row.updated_at = utcnow()
    session.flush()
    return new


def _insert_new(session: Session, rows: list[dict[str, Any]]) -> int:
    """INSERT ... ON CONFLICT DO NOTHING (Postgres and SQLite, the two the project runs
    on); the count of rows inserted."""
    dialect = session.get_bind().dialect.name
    if dialect not in {"postgresql", "sqlite"}:
        raise RuntimeError(f"brick timings: database {dialect!r} is not supported")
    from sqlalchemy.dialects import postgresql, sqlite

    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = (
        insert(BrickTiming)
        .values(rows)
        .on_conflict_do_nothing(index_elements=[BrickTiming.signature, BrickTiming.system])
    )
    return int(session.execute(statement).rowcount)  # type: ignore[attr-defined]


def save_recipe(session: Session, recipe: dict[str, Any]) -> None:
    key = (recipe["model"], int(recipe["granularity"]), input_shape_key(recipe["input_shape"]))
    row = session.get(BrickRecipe, key)
    if row is None:
        session.add(
            BrickRecipe(
                model_name=key[0],
                granularity=key[1],
                input_shape=key[2],
                recipe=recipe,
                created_at=utcnow(),
            )
        )
    else:
        row.recipe = recipe
    session.flush()


def find_recipes(
    session: Session, model: str, granularity: int | None = None
) -> list[dict[str, Any]]:
    query = select(BrickRecipe).where(BrickRecipe.model_name == model)
    if granularity is not None:
        query = query.where(BrickRecipe.granularity == granularity)
    rows = session.scalars(query.order_by(BrickRecipe.granularity, BrickRecipe.input_shape))
    return [dict(row.recipe) for row in rows]
