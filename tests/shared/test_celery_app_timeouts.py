"""A hung broker costs a publish its bound, not for ever: a Redis of this test's own,
stopped with SIGSTOP (it accepts connections, the kernel does, and answers nothing), makes
``send`` raise ``PublishFailed`` within ``broker_publish_timeout_seconds``. Before the
socket timeouts, the publish waited until the Redis was continued."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from services.core.messages import EvaluationRequested
from shared.celery_app import PublishFailed, make_celery, send
from shared.settings import Settings
from tests.support.own_servers import OwnRedis, outcome_within, stopped

# Small bounds so the test is quick; the generous upper bound below is 3x the publish one.
BOUNDS = {
    "broker_connect_timeout_seconds": 0.5,
    "broker_socket_timeout_seconds": 1.5,
    "broker_publish_timeout_seconds": 3.0,
}


@pytest.fixture
def own_redis() -> Iterator[OwnRedis]:
    server = OwnRedis()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_the_transport_gets_the_socket_bounds_from_settings() -> None:
    app = make_celery(Settings(broker_url="redis://127.0.0.1:1/0", **BOUNDS))
    options = app.conf.broker_transport_options
    assert options["socket_connect_timeout"] == 0.5
    assert options["socket_timeout"] == 1.5
    assert app.conf.task_publish_retry_policy["max_retries"] == Settings().broker_publish_retries


def test_a_publish_to_a_stopped_redis_fails_typed_within_its_bound(own_redis: OwnRedis) -> None:
    app = make_celery(Settings(broker_url=own_redis.url, **BOUNDS))
    message = EvaluationRequested(evaluation_id="e-1")
    # Connected first, as the API is after its first submission.
    send(app, "scheduler.plan_evaluation", message)
    with stopped(own_redis):
        raised = outcome_within(
            lambda: send(app, "scheduler.plan_evaluation", message),
            3 * BOUNDS["broker_publish_timeout_seconds"],
        )
        assert isinstance(raised, PublishFailed), raised
    # Fresh connections are bounded alike (the first publish of a new process).
    fresh = make_celery(Settings(broker_url=own_redis.url, **BOUNDS))
    with stopped(own_redis):
        raised = outcome_within(
            lambda: send(fresh, "scheduler.plan_evaluation", message),
            3 * BOUNDS["broker_publish_timeout_seconds"],
        )
        assert isinstance(raised, PublishFailed), raised
    # Continued, the broker takes messages again through the same app.
    send(app, "scheduler.plan_evaluation", message)


def test_a_refused_connection_fails_typed_too() -> None:
    app = make_celery(Settings(broker_url="redis://127.0.0.1:1/0", **BOUNDS))
    started = time.monotonic()
    with pytest.raises(PublishFailed):
        send(app, "scheduler.plan_evaluation", EvaluationRequested(evaluation_id="e-1"))
    assert time.monotonic() - started < 3 * BOUNDS["broker_publish_timeout_seconds"]
