"""The Celery app factory every worker and the API share.

JSON only (no pickle: a message must never carry code), late acks with
reject-on-worker-lost so a worker killed mid-task gets its message redelivered (tasks
are idempotent by run id), one message prefetched at a time so a long inference run does
not hoard queued work, and routes taken from ``shared.queues``.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

import kombu.exceptions
import redis.exceptions
from celery import Celery

from shared import broker_transport, queues
from shared.settings import Settings

log = logging.getLogger(__name__)


class Payload(Protocol):
    """What the broker carries: a message that gives its JSON. The message types are
    contracts in a layer above this one, so the broker types what it sends by this alone."""

    def to_json(self) -> dict[str, Any]: ...


# How every part publishes: (task name, message, queue or None for the task's route). The
# API and each worker are handed one at start-up; tests hand them one that records.
Publisher = Callable[[str, Payload, str | None], None]
# A publisher whose messages reach the broker together when its context ends (one Redis
# pipeline, one round trip; kombu's Producer.batch), or none of them if it ends in error.
PublishBatch = Callable[[], AbstractContextManager[Publisher]]

TASK_MODULES = (
    "services.tasks.scheduler",
    "services.tasks.preprocess",
    "services.tasks.inference",
    "services.tasks.aggregator",
)


# The longest an inference run may take, measured from its claim to its completion
# (``BENCHSTACK_MAX_RUN_SECONDS``, ``Settings.max_run_seconds``). The broker's visibility
# timeout, after which Redis hands an unacknowledged message to another worker, derives
# from it so that a long run is not delivered twice for no reason. Recovery does not wait
# for it: the claim is renewed while the run lives and the scheduler's sweeper dispatches
# a run whose claim lapsed (a redelivery of a live run finds its claim held and does
# nothing).
VISIBILITY_MARGIN_SECONDS = 600.0


def visibility_timeout_seconds(settings: Settings) -> float:
    """Unacked messages return to the queue after this long (Redis): longer than any run."""
    return settings.max_run_seconds + VISIBILITY_MARGIN_SECONDS


class PublishFailed(kombu.exceptions.OperationalError):
    """A message did not reach the broker within the publish bound
    (``broker_publish_timeout_seconds``). Whether it reached it at all is unknown: a hung
    Redis may still take it once it wakes, so whatever was published must be safe to
    receive twice (every task is idempotent by evaluation or run id)."""


# Celery's conf key holding the publish bound in seconds (read by ``send``).
PUBLISH_TIMEOUT_KEY = "benchstack_publish_timeout_seconds"


def celery_config(settings: Settings) -> dict[str, Any]:
    return {
        "broker_url": settings.broker_url,
        **_transport(settings.broker_url),
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "task_ignore_result": True,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_routes": queues.TASK_ROUTES,
        "task_default_queue": queues.SCHEDULER,
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": {
            # Unacked messages return to the queue after this long (Redis); longer than
            # any run.
            "visibility_timeout": int(visibility_timeout_seconds(settings)),
            # Every connect and socket read/write is bounded: a stopped Redis accepts
            # connections (the kernel does) and answers nothing, which hung a publish.
            "socket_connect_timeout": settings.broker_connect_timeout_seconds,
            "socket_timeout": settings.broker_socket_timeout_seconds,
        },
        "broker_connection_timeout": settings.broker_connect_timeout_seconds,
        # Retries of a publish after a lost connection, quickly (a broker restarted in a
        # moment is met), within the deadline ``send`` enforces.
        "task_publish_retry_policy": {
            "max_retries": settings.broker_publish_retries,
            "interval_start": 0,
            "interval_step": 0.2,
            "interval_max": 0.5,
        },
        PUBLISH_TIMEOUT_KEY: settings.broker_publish_timeout_seconds,
        "worker_hijack_root_logger": False,
        "enable_utc": True,
    }


def _transport(broker_url: str) -> dict[str, Any]:
    """Redis through kombu's transport mended not to kill a worker that loses the broker
    with tasks under way (shared/broker_transport.py); any other broker as Celery picks."""
    scheme, _, rest = broker_url.partition("://")
    if scheme == "redis":
        return {"broker_transport": broker_transport.DOTTED_PATH}
    if scheme != "rediss":
        return {}
    # The same transport over TLS; kombu reads the TLS options from the URL's query. Named
    # by its dotted path, kombu no longer knows the scheme meant TLS, so a URL without TLS
    # options gets here what kombu gives it (TLS, certificate not verified, with kombu's
    # warning) rather than a plain connection to a TLS port.
    if "ssl_cert_reqs=" in rest:
        return {"broker_transport": broker_transport.DOTTED_PATH}
    log.warning(
        "broker_url: rediss:// without ssl_cert_reqs: the broker's certificate is not "
        "verified; add ?ssl_cert_reqs=required (and ssl_ca_certs=...) to verify it"
    )
    return {
        "broker_transport": broker_transport.DOTTED_PATH,
        "broker_use_ssl": {"ssl_cert_reqs": ssl.CERT_NONE},
    }


def make_celery(settings: Settings, *, include_tasks: bool = False) -> Celery:
    """A configured app. The API sends tasks by name, so it leaves ``include_tasks`` off."""
    app = Celery("benchstack", include=list(TASK_MODULES) if include_tasks else [])
    app.conf.update(celery_config(settings))
    return app


def queue_backlog(app: Celery, queue: str) -> int:
    """Messages waiting in ``queue`` for a consumer (not those a worker holds unacked);
    0 when the broker has no such queue (Redis drops an empty list)."""
    with app.connection_for_read() as connection, connection.channel() as channel:
        try:
            declared = channel.queue_declare(queue=queue, passive=True)
        except connection.channel_errors:
            return 0
        return int(declared.message_count)


# kombu's Redis transport: a queue is a list per priority step ("<queue>", then
# "<queue>\x06\x16<step>"), and a queue bound to its exchange (Celery names the exchange
# after the queue) is a member of these sets.
_PRIORITY_SEPARATOR = "\x06\x16"
_BINDING_KEYS = ("_kombu.binding.{}", "_kombu.binding_permanent.{}")


def drop_queue(app: Celery, queue: str) -> bool:
    """Delete an empty queue's keys from a Redis broker (its lists and kombu's bindings);
    False, deleting nothing, while a message waits in it (or on another broker). Checked
    and deleted in one transaction: a message sent meanwhile makes it a no-op."""
    import redis

    with app.connection_for_read() as connection:
        channel = connection.default_channel
        client = getattr(channel, "client", None)
        if not isinstance(client, redis.Redis):
            return False
        steps = getattr(channel, "priority_steps", [0])
        lists = [queue if step == 0 else f"{queue}{_PRIORITY_SEPARATOR}{step}" for step in steps]
        bindings = [key.format(queue) for key in _BINDING_KEYS]
        with client.pipeline() as pipe:
            try:
                pipe.watch(*lists)
                if any(pipe.llen(name) for name in lists):
                    return False
                pipe.multi()
                pipe.delete(*lists, *bindings)
                pipe.execute()
            except redis.WatchError:
                return False  # a message arrived while we looked
        return True


def broker_identity(app: Celery) -> str:
    """What changes when the broker restarts: Redis' ``run_id``, new at every start. A
    Redis restarted without persistence lost every queued and unacked message, so a new
    identity tells the sweeper to publish again what every evaluation waits for."""
    with app.connection_for_read() as connection:
        client = connection.default_channel.client
        return str(client.info("server")["run_id"])


def send(
    app: Celery,
    task_name: str,
    message: Payload,
    *,
    queue: str | None = None,
    producer: Any = None,
) -> None:
    """Publish one message; the payload is the message's JSON, the only argument.
    ``producer``: one of the app's producers (e.g. inside its batch); None: one from the
    app's pool for this message."""
    options: dict[str, Any] = {"queue": queue} if queue else {}
    if producer is not None:
        options["producer"] = producer
    if app.conf.broker_transport == broker_transport.DOTTED_PATH:
        # Redis needs no declaration for a message to reach its queue: Celery publishes
        # through the anonymous exchange to the list the queue names (LPUSH makes it), and
        # consumers declare what they read. A declaration costs two round trips (LLEN,
        # SADD) the first time a connection names a queue, and a fan-out names a new
        # direct queue per member: 27 % of the scheduler's plan time (docs/scale.md).
        options["declare"] = []
    # What the workers' logs show of the arguments: Celery would otherwise write a repr
    # of the whole payload for each message (a third of a publish's time).
    evaluation_id = getattr(message, "evaluation_id", "")
    shown = f"({type(message).__name__} {evaluation_id})"
    bound_s = float(app.conf.get(PUBLISH_TIMEOUT_KEY) or 0) or None
    try:
        app.send_task(
            task_name,
            args=[message.to_json()],
            argsrepr=shown,
            kwargsrepr="{}",
            headers={queues.PUBLISHED_AT_HEADER: time.time()},
            retry_policy=_retry_policy(app, shown, bound_s),
            **options,
        )
    except PublishFailed:
        raise
    except _BROKER_ERRORS as exc:
        raise PublishFailed(f"publishing {shown}: {exc.__class__.__name__}: {exc}") from exc


# What a publish that could not reach the broker raises, here or wrapped by kombu.
_BROKER_ERRORS = (kombu.exceptions.OperationalError, redis.exceptions.RedisError, OSError)


def _retry_policy(app: Celery, shown: str, bound_s: float | None) -> dict[str, Any]:
    """The app's retry policy, giving up before a retry that could not end within
    ``bound_s`` of now: kombu bounds retries by count, not time, and each attempt on a
    hung broker costs up to a connect and a socket timeout."""
    policy = dict(app.conf.task_publish_retry_policy or {})
    if bound_s is None:
        return policy
    options = app.conf.broker_transport_options or {}
    attempt_s = float(options.get("socket_connect_timeout") or 0) + float(
        options.get("socket_timeout") or 0
    )
    deadline = time.monotonic() + bound_s

    def give_up_past_deadline(exc: BaseException, interval: float) -> None:
        if time.monotonic() + interval + attempt_s > deadline:
            raise PublishFailed(
                f"publishing {shown}: no answer from the broker within {bound_s:g} s "
                f"({exc.__class__.__name__}: {exc})"
            ) from exc

    return {**policy, "errback": give_up_past_deadline}


def publisher(app: Celery) -> Publisher:
    """A ``Publisher`` that sends through ``app``."""

    def publish(task_name: str, message: Payload, queue: str | None) -> None:
        send(app, task_name, message, queue=queue)

    return publish


def batch_publisher(app: Celery) -> PublishBatch:
    """A ``PublishBatch`` over ``app``'s broker. Each publish inside the batch still builds
    its own message (headers, trace context); the broker gets them all in one round trip
    at the end, rather than one each: a fan-out of 200 members' messages took 0.9-3.4 s
    one by one on a loaded 2-core host (docs/scale.md). A transport without batches
    (kombu's memory transport) publishes each at once."""

    @contextmanager
    def batch() -> Iterator[Publisher]:
        with app.producer_or_acquire() as producer, producer.batch():

            def publish(task_name: str, message: Payload, queue: str | None) -> None:
                send(app, task_name, message, queue=queue, producer=producer)

            yield publish

    return batch
