"""On Postgres: two concurrent saves of one run both succeed with one row, and of two
concurrent claims of one run exactly one wins."""

from __future__ import annotations

import math
import threading
import uuid

import pytest
from sqlalchemy import func, select

from services.aggregator.repository import RunRecord, metrics_from_report, save_run
from services.api.auth import get_or_create_user
from shared.db import evaluation_repo
from shared.db.evaluations import Evaluation
from shared.db.models import Metric, Run
from shared.db.session import session_scope
from shared.db.states import EvaluationState
from tests.support.rows import evaluation_row

pytestmark = pytest.mark.integration


def _record(run_id: str) -> RunRecord:
    report = {
        "performance": {
            "samples_per_second": 10.0,
            "qps": math.nan,
            "latency": {
                "min_ns": 1e6,
                "mean_ns": 2e6,
                "max_ns": 3e6,
                "percentiles_ns": {"p50": 2e6, "p90": 3e6},
            },
            "validity": {"result": "VALID"},
        }
    }
    return RunRecord(
        id=run_id,
        model_name="m",
        model_version="1.0.0",
        framework="null",
        framework_version="0",
        scenario="offline",
        mode="performance",
        batch_size=1,
        dataset="synthetic",
        validity="VALID",
        samples_per_second=10.0,
        manifest={},
        settings={},
        environment={},
        report=report,
        log_prefix=f"runs/{run_id}/attempt-1",
    )


def test_concurrent_saves_of_one_run_keep_one_row(postgres_url: str) -> None:
    run_id = str(uuid.uuid4())
    errors: list[BaseException] = []
    inserted = threading.Event()
    release = threading.Event()

    def first() -> None:
        try:
            with session_scope(postgres_url) as session:
                assert save_run(session, _record(run_id)) is True
                inserted.set()
                release.wait(10)  # hold the uncommitted row while the second save runs
        except BaseException as exc:
            errors.append(exc)
            inserted.set()

    thread = threading.Thread(target=first)
    thread.start()
    assert inserted.wait(10)
    second_done = threading.Event()
    second: list[str] = []

    def save_second() -> None:
        try:
            with session_scope(postgres_url) as session:
                # Not visible yet: the existence check passes, the insert waits on the lock.
                second.append(save_run(session, _record(run_id)))
        except BaseException as exc:
            errors.append(exc)
        second_done.set()

    other = threading.Thread(target=save_second)
    other.start()
    assert not second_done.wait(0.5)  # blocked on the first's uncommitted row
    release.set()
    thread.join(10)
    other.join(10)
    assert errors == []
    assert second == [False]  # the first save stored it
    with session_scope(postgres_url) as session:
        assert session.scalar(select(func.count()).select_from(Run)) == 1
        metrics = session.scalar(select(func.count()).select_from(Metric))
        assert metrics == len(metrics_from_report(_record(run_id).report))  # once, not twice
        run = session.get(Run, run_id)
        assert run is not None and run.log_prefix.endswith("attempt-1")


def test_concurrent_claims_have_one_winner(postgres_url: str) -> None:
    evaluation_id = str(uuid.uuid4())
    with session_scope(postgres_url) as session:
        owner = get_or_create_user(session, "claims")
        session.flush()
        session.add(evaluation_row(owner.id, id=evaluation_id, state=EvaluationState.RUNNING.value))
    barrier = threading.Barrier(4)
    won: list[int | None] = []
    lock = threading.Lock()

    def claim(n: int) -> None:
        with session_scope(postgres_url) as session:
            barrier.wait(10)
            attempt = evaluation_repo.claim_run(
                session, evaluation_id, agent_id=f"h/q/{n}", lease_s=3600, live_within_s=30
            )
        with lock:
            won.append(attempt)

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    # The winner's agent has no heartbeat row, so later claimants may take over; but a
    # claim is a compare-and-set on the attempt read, so each attempt number has one owner.
    numbers = [w for w in won if w is not None]
    assert numbers and len(numbers) == len(set(numbers))
    with session_scope(postgres_url) as session:
        row = session.get(Evaluation, evaluation_id)
        assert row is not None and row.attempt == max(numbers)
