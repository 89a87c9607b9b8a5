"""Queue and task names, in one import-light place.

Queues are split by kind of work so that each scales apart: CPU preprocessing never
waits behind a GPU run. Task names are prefixed by their queue, so routing is a glob.
Inference queues are per framework and device (``inference.torch.cuda``): a worker
consumes only the queues of the backends it can actually run.
"""

from __future__ import annotations

import re

from shared.devices import parse_device

# A header on every message (shared/celery_app.send): when it was handed to the broker,
# Unix seconds. A consumer subtracts it from its receipt to tell the time a message spent
# in the broker and in its receive loop from the time before the publish (each task's
# span records it, shared/tracing.py; benchmarks/scale.py splits dispatch latency so).
PUBLISHED_AT_HEADER = "benchstack_published_at"

SCHEDULER = "scheduler"
PREPROCESS = "preprocess"
AGGREGATOR = "aggregator"
INFERENCE_PREFIX = "inference"

# Task names (queue prefix + verb).
PLAN_EVALUATION = "scheduler.plan_evaluation"
PREPROCESS_SHARD = "preprocess.shard"
RUN_INFERENCE = "inference.run"
RUN_COMPLETED = "aggregator.run_completed"

# The worker kinds `benchstack worker NAME` accepts.
WORKER_KINDS = ("scheduler", "preprocess", "inference", "aggregator")

_PART = re.compile(r"^[a-z0-9_-]+$")


def inference_queue(framework: str, device: str) -> str:
    """``inference.<framework>.<device kind>``: ``cuda:1`` consumes ``...cuda``."""
    if not _PART.match(framework):
        raise ValueError(f"framework: {framework!r} must be lowercase letters, digits, '_' or '-'")
    return f"{INFERENCE_PREFIX}.{framework}.{parse_device(device).kind}"


# Static routes; inference tasks name their queue when they are sent.
TASK_ROUTES: dict[str, dict[str, str]] = {
    "scheduler.*": {"queue": SCHEDULER},
    "preprocess.*": {"queue": PREPROCESS},
    "aggregator.*": {"queue": AGGREGATOR},
}


def host_queue(queue: str, hostname: str) -> str:
    """The queue only the agents on ``hostname`` consume."""
    return f"{queue}@{hostname}"


def direct_queue(queue: str, hostname: str, pid: int) -> str:
    """The queue only one worker process consumes (routing by its settings, or fan-out)."""
    return f"{host_queue(queue, hostname)}/{pid}"
