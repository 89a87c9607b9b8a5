"""Migrations build the schema; the state machine's compare-and-set transitions hold."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text

from shared.db import evaluation_repo
from shared.db.accounts import User
from shared.db.evaluations import Evaluation, Shard
from shared.db.migrations import alembic_config, current_revision, upgrade_head
from shared.db.session import session_scope
from shared.db.states import EvaluationState, can_transition
from tests.support.rows import evaluation_row

TABLES = {
    "users",
    "api_tokens",
    "models",
    "datasets",
    "agents",
    "evaluations",
    "shards",
    "runs",
    "metrics",
    "brick_timings",
    "brick_systems",
    "brick_recipes",
}


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'db.sqlite'}"


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_migrations_create_every_table(backend: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue(f"{backend}_url")
    upgrade_head(url)
    upgrade_head(url)  # a second run is a no-op
    engine = create_engine(url)
    assert set(inspect(engine).get_table_names()) >= TABLES
    assert current_revision(engine) == head_revision()
    engine.dispose()


def test_embedded_database_made_before_migrations_is_adopted(sqlite_url: str) -> None:
    """An old embedded SQLite file already holds runs/metrics (made by create_all)."""
    from shared.db.models import Metric, Run

    engine = create_engine(sqlite_url)
    Run.__table__.create(engine)  # type: ignore[attr-defined]
    Metric.__table__.create(engine)  # type: ignore[attr-defined]
    upgrade_head(sqlite_url)
    assert set(inspect(engine).get_table_names()) >= TABLES
    engine.dispose()


def test_state_machine_rules() -> None:
    S = EvaluationState
    assert can_transition(S.QUEUED, S.PREPROCESSING)
    assert not can_transition(S.QUEUED, S.RUNNING)
    assert can_transition(S.RUNNING, S.FAILED)
    assert not can_transition(S.SUCCEEDED, S.FAILED)
    assert not can_transition(S.CANCELLED, S.CANCELLED)
    # The steps back (lost work done again) are taken only when asked for by name.
    assert not can_transition(S.RUNNING, S.PREPROCESSING)
    assert not can_transition(S.AGGREGATING, S.RUNNING)
    assert can_transition(S.RUNNING, S.PREPROCESSING, back=True)
    assert can_transition(S.AGGREGATING, S.RUNNING, back=True)
    assert not can_transition(S.PREPROCESSING, S.RUNNING, back=True)
    assert not can_transition(S.SUCCEEDED, S.PREPROCESSING, back=True)


def _evaluation(url: str, shards: int) -> str:
    with session_scope(url) as session:
        user = User(name=f"u-{uuid.uuid4().hex[:6]}")
        session.add(user)
        session.flush()
        evaluation = evaluation_row(
            user.id,
            state=EvaluationState.PREPROCESSING.value,
            shards_total=shards,
        )
        session.add(evaluation)
        for index in range(shards):
            session.add(
                Shard(evaluation_id=evaluation.id, index=index, key=f"k{index}", sample_count=1)
            )
        return evaluation.id


def test_last_shard_moves_to_running_exactly_once(sqlite_url: str) -> None:
    evaluation_id = _evaluation(sqlite_url, shards=2)
    with session_scope(sqlite_url) as session:
        assert evaluation_repo.mark_shard_ready(session, evaluation_id, 0) is False
    with session_scope(sqlite_url) as session:
        assert evaluation_repo.mark_shard_ready(session, evaluation_id, 1) is True
    with session_scope(sqlite_url) as session:
        # A redelivered message for the same shard changes nothing and dispatches nothing.
        assert evaluation_repo.mark_shard_ready(session, evaluation_id, 1) is False
        row = session.get(Evaluation, evaluation_id)
        assert row is not None and row.state == "RUNNING" and row.shards_ready == 2


def test_final_states_stick(sqlite_url: str) -> None:
    evaluation_id = _evaluation(sqlite_url, shards=1)
    with session_scope(sqlite_url) as session:
        assert evaluation_repo.fail(session, evaluation_id, "preprocess: broken image")
        assert not evaluation_repo.transition(session, evaluation_id, EvaluationState.RUNNING)
        assert not evaluation_repo.transition(session, evaluation_id, EvaluationState.CANCELLED)
        row = session.execute(text("SELECT state, reason FROM evaluations")).one()
        assert tuple(row) == ("FAILED", "preprocess: broken image")


def test_a_locked_transition_keeps_the_state_machine_and_clears_the_reason(
    sqlite_url: str,
) -> None:
    evaluation_id = _evaluation(sqlite_url, shards=1)
    with session_scope(sqlite_url) as session:
        row = session.get(Evaluation, evaluation_id, with_for_update=True)
        assert row is not None
        row.reason = "PREPROCESSING without progress; re-dispatched"
        assert not evaluation_repo.transition_locked(row, EvaluationState.QUEUED)
        assert row.state == "PREPROCESSING"
        assert evaluation_repo.transition_locked(row, EvaluationState.RUNNING, shards_ready=1)
    with session_scope(sqlite_url) as session:
        stored = session.get(Evaluation, evaluation_id)
        assert stored is not None
        assert (stored.state, stored.shards_ready, stored.reason) == ("RUNNING", 1, "")
        assert evaluation_repo.transition_locked(stored, EvaluationState.CANCELLED)
        assert stored.finished_at is not None
        assert not evaluation_repo.transition_locked(stored, EvaluationState.RUNNING)


def head_revision() -> str | None:
    """The newest migration in the code, whatever its number."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()
