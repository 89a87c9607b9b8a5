"""An evaluation that waits on a kind of worker none of which is alive says so."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from services.api.auth import get_or_create_user
from shared import runtime
from shared.db import worker_repo
from shared.db.clock import utcnow
from shared.db.evaluations import Evaluation, WorkerPresence
from tests.support.rows import evaluation_row

LIVE_S = 30.0


def _evaluation(state: str, waited_s: float) -> Evaluation:
    with runtime.db() as session:
        owner = get_or_create_user(session, "waiting")
        session.flush()
        row = evaluation_row(
            owner.id,
            id=f"e-{state}-{waited_s}",
            state=state,
            model_name="resnet18",
            queue="inference.null.cpu",
            updated_at=utcnow() - timedelta(seconds=waited_s),
        )
        session.add(row)
    return row


def _reason(evaluation: Evaluation) -> str:
    with runtime.db() as session:
        row = session.get(Evaluation, evaluation.id)
        assert row is not None
        return worker_repo.waiting_reason(session, row, live_within_s=LIVE_S)


def test_a_stalled_evaluation_names_the_missing_worker(data_dir: Path) -> None:
    runtime.reset()
    stalled = _evaluation("PREPROCESSING", waited_s=45)
    assert "no live preprocess worker" in _reason(stalled)
    assert _reason(stalled).startswith("waiting 45 s")
    # A worker whose heartbeat stopped is not live either.
    with runtime.db() as session:
        worker_repo.register(
            session,
            worker_id="preprocess@h/1",
            kind="preprocess",
            node="preprocess@h",
            hostname="h",
            pid=1,
        )
    with runtime.db() as session:
        row = session.get(WorkerPresence, "preprocess@h/1")
        assert row is not None
        row.last_heartbeat = utcnow() - timedelta(seconds=2 * LIVE_S)
    assert "no live preprocess worker" in _reason(stalled)
    with runtime.db() as session:
        worker_repo.beat(session, "preprocess@h/1")
    assert _reason(stalled) == ""
    runtime.reset()


def test_a_fresh_evaluation_and_one_with_a_live_agent_say_nothing(data_dir: Path) -> None:
    runtime.reset()
    # Too young to call stalled: a worker may be starting.
    assert _reason(_evaluation("QUEUED", waited_s=5)) == ""
    running = _evaluation("RUNNING", waited_s=60)
    assert "no live inference agent on queue inference.null.cpu" in _reason(running)
    from shared.db import evaluation_repo

    with runtime.db() as session:
        evaluation_repo.upsert_agent(
            session,
            agent_id="h/inference.null.cpu/1",
            hostname="h",
            queue="inference.null.cpu",
            framework="null",
            framework_version="0",
            device="cpu",
            hardware={},
            software={},
        )
    assert _reason(running) == ""
    runtime.reset()


def test_a_run_queued_behind_busy_agents_says_what_it_waits_for(data_dir: Path) -> None:
    """Live agents consume its queue, but they are busy: the reason names what they run
    and how many runs are ahead of it, never ""."""
    runtime.reset()
    from shared.db import evaluation_repo

    agent = "h/inference.null.cpu/1"
    with runtime.db() as session:
        evaluation_repo.upsert_agent(
            session, agent_id=agent, hostname="h", queue="inference.null.cpu",
            framework="null", framework_version="0", device="cpu", hardware={}, software={},
        )  # fmt: skip
    measuring = _evaluation("RUNNING", waited_s=300)
    ahead = [_evaluation("RUNNING", waited_s=200 + i) for i in range(2)]
    waiting = _evaluation("RUNNING", waited_s=100)
    _evaluation("RUNNING", waited_s=50)  # behind it: not counted
    with runtime.db() as session:
        attempt = evaluation_repo.claim_run(
            session, measuring.id, agent_id=agent, lease_s=30, live_within_s=LIVE_S
        )
        assert attempt == 1
    assert _reason(waiting) == (
        "waiting 100 s: queued behind 2 evaluations on inference.null.cpu; "
        f"agent {agent} is running evaluation {measuring.id[:8]}"
    )
    assert _reason(ahead[0]).startswith("waiting 200 s: queued behind 1 evaluation on ")
    # The one being measured waits for nothing.
    assert _reason(measuring) == ""
    runtime.reset()
