"""The Celery app's contract (JSON only, late acks, routes) and trace propagation."""

from __future__ import annotations

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.core.messages import RunInference
from shared import queues
from shared.celery_app import make_celery
from shared.settings import Settings
from shared.tracing import extract_context, inject_headers, setup_tracing, tracer


def test_configuration_is_json_only_late_ack_and_routed() -> None:
    app = make_celery(Settings(broker_url="redis://127.0.0.1:6379/15"))
    conf = app.conf
    assert conf.task_serializer == "json" and conf.accept_content == ["json"]
    assert conf.task_acks_late and conf.task_reject_on_worker_lost
    assert conf.worker_prefetch_multiplier == 1
    router = app.amqp.router
    assert router.route({}, queues.PREPROCESS_SHARD)["queue"].name == "preprocess"
    assert router.route({}, queues.PLAN_EVALUATION)["queue"].name == "scheduler"
    assert router.route({}, queues.RUN_COMPLETED)["queue"].name == "aggregator"


def test_task_names_are_prefixed_by_queue() -> None:
    assert queues.RUN_INFERENCE == "inference.run"
    for name in (queues.PLAN_EVALUATION, queues.PREPROCESS_SHARD, queues.RUN_COMPLETED):
        assert name.split(".")[0] in {queues.SCHEDULER, queues.PREPROCESS, queues.AGGREGATOR}
    assert queues.inference_queue("torch", "cuda") == "inference.torch.cuda"


def test_messages_carry_keys_not_tensors() -> None:
    fields = set(RunInference.model_fields)
    assert "shard_keys" in fields and not {"tensors", "data"} & fields


def test_trace_context_survives_headers(spans: InMemorySpanExporter) -> None:
    with tracer().start_as_current_span("api") as parent:
        headers = inject_headers({})
    assert "traceparent" in headers

    class Request:  # what Celery hands the worker: headers as attributes
        traceparent = headers["traceparent"]

    with tracer().start_as_current_span("task", context=extract_context(Request())) as child:
        assert child.get_span_context().trace_id == parent.get_span_context().trace_id
    assert {s.name for s in spans.get_finished_spans()} == {"api", "task"}


def test_setup_tracing_exports_through_the_given_exporter() -> None:
    # A provider of its own, not installed globally: the process may already have one.
    exporter = InMemorySpanExporter()
    provider = setup_tracing("test", Settings(), exporter=exporter, install=False)
    with provider.get_tracer("t").start_as_current_span("work"):
        pass
    provider.force_flush()
    assert [s.resource.attributes["service.name"] for s in exporter.get_finished_spans()] == [
        "test"
    ]


def test_queue_backlog_counts_the_messages_waiting_in_redis() -> None:
    """Against the real broker: the sweeper reads a stage's backlog from it."""
    import os
    import uuid

    import redis

    from services.core.messages import EvaluationRequested
    from shared.celery_app import publisher, queue_backlog, send

    base = os.environ.get("BENCHSTACK_TEST_REDIS", "redis://127.0.0.1:6379")
    db = int(os.environ.get("BENCHSTACK_TEST_REDIS_DB", "11"))
    app = make_celery(Settings(broker_url=f"{base}/{db}"))
    queue = f"backlog-test-{uuid.uuid4().hex[:8]}"  # no worker consumes it
    try:
        assert queue_backlog(app, queue) == 0  # Redis has no such list yet
        for n in range(2):
            message = EvaluationRequested(evaluation_id=f"e{n}")
            send(app, queues.PLAN_EVALUATION, message, queue=queue)
        # What a worker is handed at start-up publishes through the same app.
        publisher(app)(queues.PLAN_EVALUATION, EvaluationRequested(evaluation_id="e2"), queue)
        assert queue_backlog(app, queue) == 3
        assert queue_backlog(app, f"{queue}-other") == 0
    finally:
        redis.Redis.from_url(f"{base}/{db}").delete(queue)


def test_drop_queue_deletes_an_empty_queue_and_keeps_one_holding_messages() -> None:
    """Against the real broker: a dead agent's queue goes with its bindings, only once
    nothing waits in it."""
    import os
    import uuid

    import redis

    from services.core.messages import EvaluationRequested
    from shared.celery_app import drop_queue, send
    from tests.support.consumer_queues import declare_as_consumer

    base = os.environ.get("BENCHSTACK_TEST_REDIS", "redis://127.0.0.1:6379")
    db = int(os.environ.get("BENCHSTACK_TEST_REDIS_DB", "11"))
    app = make_celery(Settings(broker_url=f"{base}/{db}"))
    client = redis.Redis.from_url(f"{base}/{db}")
    queue = f"drop-test-{uuid.uuid4().hex[:8]}@host/1234"
    bindings = [f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}"]
    try:
        declare_as_consumer(app, queue)  # its binding; then a message arrives
        send(app, queues.PLAN_EVALUATION, EvaluationRequested(evaluation_id="e"), queue=queue)
        held = [key for key in [queue, *bindings] if client.exists(key)]
        assert queue in held and len(held) >= 2, held  # the list and kombu's binding
        assert drop_queue(app, queue) is False  # a message waits: nothing deleted
        assert [key for key in [queue, *bindings] if client.exists(key)] == held
        client.delete(queue)  # the message taken
        assert drop_queue(app, queue) is True
        assert not any(client.exists(key) for key in [queue, *bindings])
        assert drop_queue(app, queue) is True  # already gone: nothing left to do
    finally:
        client.delete(queue, *bindings)
        client.close()


def test_a_batch_reaches_the_broker_together_and_none_of_it_on_error() -> None:
    """Against the real broker: a batch's messages wait in the producer until its block
    ends, then arrive all at once, each stamped with when it was published; a block that
    fails sends none of its messages."""
    import json
    import os
    import time
    import uuid

    import pytest
    import redis

    from services.core.messages import EvaluationRequested
    from shared.celery_app import batch_publisher

    base = os.environ.get("BENCHSTACK_TEST_REDIS", "redis://127.0.0.1:6379")
    db = int(os.environ.get("BENCHSTACK_TEST_REDIS_DB", "11"))
    app = make_celery(Settings(broker_url=f"{base}/{db}"))
    client = redis.Redis.from_url(f"{base}/{db}")
    queue = f"batch-test-{uuid.uuid4().hex[:8]}"
    before = time.time()
    try:
        with batch_publisher(app)() as publish:
            for n in range(3):
                publish(queues.PLAN_EVALUATION, EvaluationRequested(evaluation_id=f"e{n}"), queue)
            assert client.llen(queue) == 0  # still in the pipeline
        assert client.llen(queue) == 3
        stamps = [
            json.loads(raw)["headers"][queues.PUBLISHED_AT_HEADER]
            for raw in client.lrange(queue, 0, -1)
        ]
        assert all(before <= stamp <= time.time() for stamp in stamps), stamps

        with pytest.raises(RuntimeError), batch_publisher(app)() as publish:
            publish(queues.PLAN_EVALUATION, EvaluationRequested(evaluation_id="lost"), queue)
            raise RuntimeError("the plan failed after its first publish")
        assert client.llen(queue) == 3
    finally:
        client.delete(queue)
        client.close()


def test_a_task_span_records_how_long_its_message_waited(spans: InMemorySpanExporter) -> None:
    """The queue wait a task's span carries is the time from its message's published-at
    header to the task's start."""
    import time

    from celery import signals

    from shared.tracing import QUEUE_WAIT_ATTRIBUTE, install_celery_propagation

    install_celery_propagation()

    class Task:  # what the prerun signal hands over: the task, its request's headers
        name = "scheduler.plan_evaluation"
        request = type("Request", (), {queues.PUBLISHED_AT_HEADER: time.time() - 2.5})()

    signals.task_prerun.send(sender=None, task_id="t1", task=Task(), args=[{}])
    signals.task_postrun.send(sender=None, task_id="t1", state="SUCCESS")
    (span,) = [s for s in spans.get_finished_spans() if s.name == Task.name]
    assert 2.5 <= span.attributes[QUEUE_WAIT_ATTRIBUTE] < 10
