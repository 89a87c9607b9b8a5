"""Starts one service in this process: ``python -m services.stack.entry worker scheduler``.

``benchstack api`` / ``benchstack worker NAME`` and ``benchstack up`` all land here, so a
service started by hand and one started by the stack behave the same.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import socket
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services.stack.manager import READY_FILE_ENV
from shared import queues

if TYPE_CHECKING:
    from shared.settings import Settings
    from shared.worker_context import AgentIdentity


def usable_cpus() -> int:
    """CPUs this process may run on: the affinity mask, not the host's count.

    A container limited to 2 CPUs on a 64-core node would otherwise fork 64 preprocess
    children and run out of memory. (A CFS quota without a cpuset is not seen here; set
    --concurrency there.)
    """
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class WorkerPlan:
    queues: list[str]
    pool: str
    concurrency: int


def worker_plan(kind: str, *, concurrency: int | None) -> WorkerPlan:
    """Queues and pool of the scheduler, preprocess and aggregator workers."""
    if kind not in queues.WORKER_KINDS or kind == "inference":
        raise ValueError(
            f"worker: {kind!r} is not a worker; accepted: {', '.join(queues.WORKER_KINDS)}"
        )
    if kind == "preprocess":
        # CPU-bound work: processes, one per core by default.
        return WorkerPlan([queues.PREPROCESS], "prefork", concurrency or usable_cpus())
    # Scheduler and aggregator wait on the database and the store: threads suffice.
    return WorkerPlan([kind], "threads", concurrency or 4)


def announce_ready(node: str) -> None:
    """Tell ``benchstack up`` this worker consumes, and the node name it answers pings as."""
    path = os.environ.get(READY_FILE_ENV)
    if path:
        tmp = Path(path + ".tmp")
        tmp.write_text(json.dumps({"node": node, "pid": os.getpid()}))
        tmp.replace(path)


def sweeper_for(app: Any, settings: Any) -> Any:
    from services.core.messages import EvaluationRequested
    from services.scheduler.broker_watch import BrokerWatch
    from services.scheduler.sweeper import Sweeper
    from shared.celery_app import broker_identity, drop_queue, publisher, queue_backlog

    publish_message = publisher(app)

    def publish(evaluation_id: str) -> None:
        publish_message(
            queues.PLAN_EVALUATION, EvaluationRequested(evaluation_id=evaluation_id), None
        )

    return Sweeper(
        settings,
        publish,
        lambda queue: queue_backlog(app, queue),
        BrokerWatch(lambda: broker_identity(app), publish),
        lambda queue: drop_queue(app, queue),
    )


def _group_steps(kind: str) -> dict[str, Any]:
    """The aggregator stores the runs, so it takes each group's next step; imported here,
    at the edge, so that the aggregator imports nothing from the API."""
    if kind != "aggregator":
        return {}
    from services.api.group_steps import group_steps

    return dict(group_steps())


def split_frameworks(values: list[str] | None) -> list[str]:
    """``--framework torch --framework onnxruntime`` and ``--framework torch,onnxruntime``."""
    return [f.strip() for value in values or [] for f in value.split(",") if f.strip()]


def _start_agent(
    signals: Any, settings: Settings, frameworks: list[str] | None, device: str, threads: int
) -> tuple[AgentIdentity, WorkerPlan]:
    """An inference worker is an agent: its identity for the worker context, and its
    queues; it registers once the worker consumes (an agent row must mean "work will be
    picked up") and stops with it."""
    from services.inference.agent import Agent
    from services.inference.backends.registry import available_backends
    from shared import worker_context
    from shared.devices import parse_device

    agent = Agent(
        frameworks=frameworks or available_backends(parse_device(device).kind),
        device=device,
        threads=threads,
        price_per_hour=settings.agent_price_per_hour,
        machine=settings.agent_machine,
        endpoint_url=settings.agent_endpoint_url,
        endpoint_model=settings.agent_endpoint_model,
        heartbeat_s=settings.agent_heartbeat_seconds,
    )
    identity = worker_context.AgentIdentity(
        ids={f: agent.agent_id(f) for f in agent.frameworks}, settings=dict(agent.settings)
    )
    signals.worker_ready.connect(lambda **_: agent.start(), weak=False)
    signals.worker_shutdown.connect(lambda **_: agent.stop(), weak=False)
    return identity, WorkerPlan(agent.queues(), "solo", 1)


def run_worker(
    kind: str,
    *,
    frameworks: list[str] | None = None,
    device: str = "cpu",
    threads: int = 0,
    name: str | None = None,
    concurrency: int | None = None,
    loglevel: str = "INFO",
) -> None:
    os.environ.setdefault("BENCHSTACK_SERVICE", f"benchstack-{kind}")
    from celery import signals

    from services.celery_main import app
    from services.stack.nodename import node_name
    from services.stack.presence import Presence
    from shared import worker_context
    from shared.celery_app import batch_publisher, publisher
    from shared.settings import get_settings

    settings = get_settings()
    node = node_name(kind, name=name)
    presence = Presence(
        kind, node.replace("%h", socket.gethostname()), settings.agent_heartbeat_seconds
    )
    if kind == "inference":
        identity, plan = _start_agent(signals, settings, frameworks, device, threads)
    else:
        identity, plan = worker_context.AgentIdentity(), worker_plan(kind, concurrency=concurrency)
    if kind == "scheduler":
        # Recovery does not wait for the broker's visibility timeout: the scheduler sweeps
        # for evaluations that stopped moving and dispatches them again.
        sweeper = sweeper_for(app, settings)
        signals.worker_ready.connect(lambda **_: sweeper.start(), weak=False)
        signals.worker_shutdown.connect(lambda **_: sweeper.stop(), weak=False)

    def _ready(**_: Any) -> None:
        presence.start()
        announce_ready(presence.node)

    signals.worker_ready.connect(_ready, weak=False)
    signals.worker_shutdown.connect(lambda **_: presence.stop(), weak=False)
    # Before consuming (a prefork pool's children inherit it): what every task publishes
    # through, and which agent this worker is.
    worker_context.install(
        worker_context.WorkerContext(
            publisher(app), identity, _group_steps(kind), publish_batch=batch_publisher(app)
        )
    )
    app.worker_main(
        [
            "worker",
            "--queues",
            ",".join(plan.queues),
            "--hostname",
            node,
            "--pool",
            plan.pool,
            "--concurrency",
            str(plan.concurrency),
            "--loglevel",
            loglevel,
            # No gossip or mingle: workers do not coordinate, and start faster without.
            "--without-gossip",
            "--without-mingle",
        ]
    )


# Where API processes share their Prometheus counters when there are several of them.
METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"


def api_worker_count(configured: int) -> int:
    """API processes to start: the setting, or one per usable CPU when it is 0."""
    return configured if configured > 0 else usable_cpus()


def served_api() -> Any:
    """The app as each API process serves it (uvicorn imports this in every worker)."""
    from services.api.app import create_app
    from shared.settings import get_settings
    from shared.tracing import setup_tracing

    settings = get_settings()
    setup_tracing("benchstack-api", settings)
    app = create_app(settings)
    settle_garbage_collector(settings.api_gc_threshold)
    return app


def settle_garbage_collector(threshold: int) -> None:
    """Keep the collector's pauses out of the API's tail latency.

    The objects of start-up (modules, the schema, the app) live as long as the process:
    frozen, no collection scans them again. Requests make many short-lived container
    objects, so the youngest generation is collected every ``threshold`` allocations
    rather than Python's 700. Measured under benchmarks/api_load.py (50 clients, side by
    side): p99 515 -> 238 ms and x1.22 requests/s; freezing alone gave p99 x0.82.
    """
    gc.collect()
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(threshold, second, third)


def run_api(host: str = "127.0.0.1", port: int = 8000, workers: int | None = None) -> None:
    """Serve the API; ``workers`` processes (default: ``api_workers``, 0 = one per CPU).

    Each process answers on the same port, from its own socket (services/stack/
    api_processes.py says why). With more than one, every process writes its Prometheus
    counters to a shared folder, which /metrics adds up, so a scrape sees the whole API
    whichever process answers it.
    """
    os.environ.setdefault("BENCHSTACK_SERVICE", "benchstack-api")
    from shared.settings import get_settings

    settings = get_settings()
    count = workers if workers else api_worker_count(settings.api_workers)
    if count == 1:
        import uvicorn

        uvicorn.run(
            "services.stack.entry:served_api",
            factory=True,
            host=host,
            port=port,
            access_log=settings.api_access_log,
        )
        return
    from services.stack.api_processes import serve_processes

    if not os.environ.get(METRICS_DIR_ENV):
        # Set before the processes start (they inherit it) and fresh for each start:
        # counters from an earlier run's processes must not be added in.
        os.environ[METRICS_DIR_ENV] = tempfile.mkdtemp(prefix="benchstack-api-metrics-")
    serve_processes(host, port, count, settings.api_access_log)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m services.stack.entry")
    sub = parser.add_subparsers(dest="service", required=True)
    api = sub.add_parser("api")
    api.add_argument("--host", default="127.0.0.1")
    api.add_argument("--port", type=int, default=8000)
    api.add_argument(
        "--workers", type=int, default=None, help="API processes (default: api_workers setting)"
    )
    worker = sub.add_parser("worker")
    worker.add_argument("kind", choices=queues.WORKER_KINDS)
    worker.add_argument(
        "--framework",
        "--frameworks",
        dest="frameworks",
        action="append",
        default=[],
        help="inference only; repeat or comma-separate (default: every installed backend)",
    )
    worker.add_argument("--device", default="cpu")
    worker.add_argument(
        "--threads", type=int, default=0, help="inference only; intra-op threads, 0 = default"
    )
    worker.add_argument("--name", default=None, help="Celery node name before '@host'")
    worker.add_argument("--concurrency", type=int, default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.service == "api":
        run_api(args.host, args.port, args.workers)
    else:
        run_worker(
            args.kind,
            frameworks=split_frameworks(args.frameworks),
            device=args.device,
            threads=args.threads,
            name=args.name,
            concurrency=args.concurrency,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
