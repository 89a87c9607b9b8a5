"""Faults against a whole stack on its own Postgres and Redis (the shared servers are never
touched): every evaluation ends terminal, none is lost, none is measured or stored twice,
and recovery takes well under two minutes. Fast sweeper settings keep the suite short;
benchmarks/chaos.py runs the full campaign with the default settings.

The scenarios share one stack (starting one takes ~8 s), and each leaves it whole: a
killed worker is replaced, a stopped server started again. A stack that saw a test fail
is not trusted by the next: it gets a fresh one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.chaos import (
    FAST_RECOVERY,
    ChaosStack,
    Outcome,
    empty_object_store,
    kill_worker_mid_run,
    restart_broker,
    restart_broker_behind_busy_agent,
    stop_database,
    stop_object_store,
)
from tests.support.chaos_attacks import costly_queries
from tests.support.chaos_lost_objects import lose_objects_while_running

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RECOVERY_LIMIT_S = 120


class _StackKeeper:
    """The module's one stack, made again after any failure in the session."""

    def __init__(self) -> None:
        self.stack: ChaosStack | None = None
        self.failures_when_made = 0

    def get(self, failures_so_far: int) -> ChaosStack:
        if self.stack is not None and failures_so_far != self.failures_when_made:
            self.close()
        if self.stack is None:
            self.stack = ChaosStack(FAST_RECOVERY)
            self.failures_when_made = failures_so_far
        return self.stack

    def close(self) -> None:
        if self.stack is not None:
            self.stack.close()
            self.stack = None


@pytest.fixture(scope="module")
def _keeper() -> Iterator[_StackKeeper]:
    keeper = _StackKeeper()
    try:
        yield keeper
    finally:
        keeper.close()


@pytest.fixture
def chaos(_keeper: _StackKeeper, request: pytest.FixtureRequest) -> ChaosStack:
    return _keeper.get(request.session.testsfailed)


def _assert_recovered(outcome: Outcome, chaos: ChaosStack) -> None:
    context = f"{outcome.row()}\nfailed: {outcome.failed}\n{chaos.logs()[-6000:]}"
    assert outcome.lost == 0 and outcome.stuck == 0 and outcome.duplicated == 0, context
    assert outcome.recovery_s is not None and outcome.recovery_s < RECOVERY_LIMIT_S, context
    # A SUCCEEDED one keeps no reason from the wait it recovered from.
    assert not outcome.stale_reasons, outcome.stale_reasons
    # A FAILED evaluation always says why.
    assert all(reason.strip() for reason in outcome.failed), context


@pytest.mark.parametrize("service", ["inference", "preprocess", "aggregator", "scheduler"])
def test_kill_9_of_a_worker_mid_run_recovers_and_measures_once(
    chaos: ChaosStack, service: str
) -> None:
    outcome = kill_worker_mid_run(chaos, service, timeout_s=RECOVERY_LIMIT_S)
    print(outcome.row(), outcome.failed[:3])
    _assert_recovered(outcome, chaos)
    assert outcome.completed == 1, outcome.row()


def test_a_broker_restart_loses_nothing(chaos: ChaosStack) -> None:
    outcome = restart_broker(chaos, in_flight=6, timeout_s=RECOVERY_LIMIT_S)
    print(outcome.row(), outcome.failed[:3])
    _assert_recovered(outcome, chaos)


def test_a_database_outage_leaves_nothing_stuck(chaos: ChaosStack) -> None:
    outcome = stop_database(chaos, in_flight=6, outage_s=6, timeout_s=RECOVERY_LIMIT_S)
    print(outcome.row(), outcome.failed[:3])
    _assert_recovered(outcome, chaos)


def test_a_broker_restart_behind_a_busy_agent_is_repaired_at_once() -> None:
    """With the sweeper's stall rule slowed to a minute, only the broker's new identity can
    bring the lost runs back in time: they finish within seconds of the busy run."""
    stack = ChaosStack({**FAST_RECOVERY, "BENCHSTACK_STALL_SECONDS": "60"})
    try:
        outcome = restart_broker_behind_busy_agent(stack, queued=3, busy_s=6, timeout_s=45)
        print(outcome.row(), outcome.failed[:3])
        assert outcome.completed == 4, f"{outcome.row()}\n{stack.logs()[-6000:]}"
        assert outcome.recovery_s is not None and outcome.recovery_s < 30, outcome.row()
        assert not outcome.stale_reasons, outcome.stale_reasons
    finally:
        stack.close()


@pytest.mark.parametrize("hung", [False, True], ids=["down", "hung"])
def test_an_object_store_outage_fails_nothing(chaos: ChaosStack, hung: bool) -> None:
    outcome = stop_object_store(
        chaos, in_flight=4, outage_s=6, timeout_s=RECOVERY_LIMIT_S, hung=hung
    )
    print(outcome.row(), outcome.failed[:3])
    _assert_recovered(outcome, chaos)
    assert outcome.completed == outcome.attempted, outcome.row()


def test_an_object_store_back_empty_fails_nothing(chaos: ChaosStack) -> None:
    outcome = empty_object_store(chaos, in_flight=3, timeout_s=RECOVERY_LIMIT_S)
    print(outcome.row(), outcome.failed[:3])
    _assert_recovered(outcome, chaos)
    assert outcome.completed == outcome.attempted, outcome.row()


def test_objects_lost_while_evaluations_run_fail_nothing(chaos: ChaosStack) -> None:
    """s3-lost-while-running: the bucket deleted with 6 evaluations in flight; the shards
    are prepared again (and a lost measurement measured again) and every one SUCCEEDS."""
    outcome = lose_objects_while_running(chaos, in_flight=6, timeout_s=RECOVERY_LIMIT_S)
    print(outcome.row(), outcome.failed[:3])
    _assert_recovered(outcome, chaos)
    assert outcome.completed == outcome.attempted, outcome.row()


def test_loops_of_the_costly_query_are_all_refused_and_honest_work_completes(
    chaos: ChaosStack,
) -> None:
    outcome = costly_queries(chaos, loops=2, in_flight=3, seconds=5, timeout_s=RECOVERY_LIMIT_S)
    print(outcome.row(), outcome.hostile)
    _assert_recovered(outcome, chaos)
    assert outcome.completed == outcome.attempted, outcome.row()
    answers = outcome.hostile_answers
    assert set(answers) == {"QUERY_TOO_COSTLY"} and answers["QUERY_TOO_COSTLY"] > 10, answers
