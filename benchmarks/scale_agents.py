"""Simulated inference agents for benchmarks/scale.py: many agent identities in one light
process, on the real control plane, with only the inference work simulated.

Each identity is an ``agents`` row as a real agent registers it (its own host name, its
framework's shared queue, its host queue and its direct queue; the hardware and software
this machine describes), and the process heartbeats all of its identities in one UPDATE
every ``--heartbeat`` seconds (the batched heartbeat: connections and statements grow
with processes, not agents). One kombu consumer per process takes RunInference messages
from every queue its identities consume and passes each to a runner child process, which
hands it to its identity (a shared queue's to the identity with the least work). The
consumer and the heartbeat are alone in their process, as a real agent's are on its
machine; the runner runs at ``--nice``. (A connection per identity, tried, doubled the
agents' CPU at 10,000 evaluations and overloaded the 2 cores: docs/scale.md.) Each
identity, on a thread of its own, one run at a time as an agent runs them, does what
``services/tasks/inference`` does around a measurement, through the same functions: mark
the agent busy, claim the run (``evaluation_repo.claim_run``), store
``measurement.json`` under the attempt's prefix (``measurement.store_attempt``), RUNNING
-> AGGREGATING (``evaluation_repo.complete_attempt``) and publish RunCompleted to the
real aggregator.

What is simulated: the measurement. Every run stores one template measurement (a real
null-backend LoadGen run the driver made once, ``--template``) with this run's agent and
a warning that says it was simulated. No LoadGen and no measurement child run here, so
these figures are the control plane's, never inference's.

Each message received is written as one JSON line to ``--out``: the evaluation, the
agent, the queue, when it was published (the sender's header), when this process
received it, when it was consumed (Unix seconds: when this process received it, or when
its identity finished its previous run if that ended later, as an agent on a machine of
its own takes a message when it is free) and whether this delivery claimed the run.
The process stops when ``--stop-file`` appears or on SIGTERM, marking its agents stopped.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kombu import Consumer, Exchange, Queue
from kombu.message import Message as KombuMessage

from services.core.messages import RunInference
from services.core.run_report import Measurement, attempt_prefix
from services.inference.backends import registry
from services.inference.measurement import store_attempt
from services.scheduler import fair_order
from services.tasks.inference import busy, completion_message
from shared import queues, runtime
from shared.celery_app import make_celery, publisher
from shared.db import evaluation_repo, liveness
from shared.environment import capture_environment

log = logging.getLogger("scale_agents")

FRAMEWORK = "null"
DEVICE = "cpu"
SIMULATED_WARNING = (
    "simulated agent (benchmarks/scale_agents.py): the control plane was measured, "
    "the inference was not"
)


@dataclass(frozen=True)
class Identity:
    """One simulated agent: a host of its own, as one agent per machine would be."""

    hostname: str
    pid: int

    @property
    def queue(self) -> str:
        return queues.inference_queue(FRAMEWORK, DEVICE)

    @property
    def host_queue(self) -> str:
        return queues.host_queue(self.queue, self.hostname)

    @property
    def direct_queue(self) -> str:
        return queues.direct_queue(self.queue, self.hostname, self.pid)

    @property
    def agent_id(self) -> str:
        # The format services/inference/agent.Agent.agent_id gives a real agent.
        return f"{self.hostname}/{self.queue}/{self.pid}"


def identities(first: int, count: int, pid: int) -> list[Identity]:
    return [Identity(f"sim-{index:04d}", pid) for index in range(first, first + count)]


def register(agents: list[Identity]) -> None:
    """The rows a real agent writes (services/inference/agent.Agent.register)."""
    env = capture_environment(all_packages=False)
    hardware = {k: env[k] for k in ("cpu", "memory_bytes", "gpus")}
    software = {k: env[k] for k in ("benchstack", "os", "python", "frameworks")}
    with runtime.db() as session:
        for agent in agents:
            evaluation_repo.upsert_agent(
                session,
                agent_id=agent.agent_id,
                hostname=agent.hostname,
                queue=agent.queue,
                framework=FRAMEWORK,
                framework_version=registry.installed_version(FRAMEWORK) or "unknown",
                device=DEVICE,
                hardware=hardware,
                software=software,
                settings={"intra_op_threads": 0, "simulated": True},
                direct_queue=agent.direct_queue,
            )


def heartbeat_loop(agent_ids: list[str], every_s: float, stop: threading.Event) -> None:
    """Every identity of this process in one UPDATE per beat."""
    while not stop.wait(every_s):
        try:
            with runtime.db() as session:
                evaluation_repo.heartbeat(session, agent_ids)
        except Exception:  # a blip must not end the simulation; the next beat retries
            log.warning("heartbeat failed", exc_info=True)


@dataclass(frozen=True)
class Delivery:
    """One RunInference as the receiving process took it off the broker."""

    payload: Any
    queue: str
    published_at: float  # the sender's header (shared/queues.PUBLISHED_AT_HEADER)
    delivered_at: float


def consumer_queues(agents: list[Identity]) -> list[Queue]:
    """Every queue the identities consume: the framework's shared queue, each host queue
    and each direct queue, declared as Celery declares a queue it routes to by name."""
    names = {agents[0].queue}
    for agent in agents:
        names |= {agent.host_queue, agent.direct_queue}
    return [Queue(n, Exchange(n, type="direct"), routing_key=n) for n in sorted(names)]


class SimulatedRuns:
    """Takes each RunInference as services/tasks/inference does, measuring nothing."""

    def __init__(self, agents: list[Identity], template: dict[str, Any], out: Path) -> None:
        self.by_queue: dict[str, Identity] = {}
        for agent in agents:
            self.by_queue[agent.host_queue] = agent
            self.by_queue[agent.direct_queue] = agent
        self.agents = agents
        self.template = template
        self.resources = runtime.process_resources()
        self.app = make_celery(self.resources.settings)
        self.publish = publisher(self.app)
        self._out = out.open("a", buffering=1)
        self._lock = threading.Lock()
        # One thread per identity: an agent runs one evaluation at a time.
        self._runners = {a: ThreadPoolExecutor(1, thread_name_prefix=a.hostname) for a in agents}
        self._pending = dict.fromkeys(agents, 0)  # runs handed to each identity, not done
        self._free_at = dict.fromkeys(agents, 0.0)  # when each identity's last run ended

    def _agent_for(self, queue: str) -> Identity:
        agent = self.by_queue.get(queue)
        if agent is not None:
            return agent
        with self._lock:
            return min(self.agents, key=lambda a: self._pending[a])

    def hand(self, delivery: Delivery) -> None:
        """Hand a delivery to its identity's thread (a shared queue's: the least busy)."""
        agent = self._agent_for(delivery.queue)
        with self._lock:
            self._pending[agent] += 1
        self._runners[agent].submit(self._take, delivery, agent)

    def _take(self, delivery: Delivery, agent: Identity) -> None:
        # Taken when delivered, or when the identity finished its previous run if it was
        # busy: as an agent on a machine of its own takes it.
        consumed_at = max(delivery.delivered_at, self._free_at[agent])
        claimed = False
        payload = delivery.payload
        evaluation_id = str(payload.get("evaluation_id", "")) if isinstance(payload, dict) else ""
        try:
            claimed = self.run(RunInference.model_validate(payload), agent)
        except Exception:
            log.exception("simulated run of %s failed", evaluation_id)
        record = {
            "evaluation_id": evaluation_id,
            "agent_id": agent.agent_id,
            "queue": delivery.queue,
            "published_at": delivery.published_at,
            "delivered_at": delivery.delivered_at,
            "consumed_at": consumed_at,
            "claimed": claimed,
        }
        with self._lock:
            self._pending[agent] -= 1
            self._free_at[agent] = time.time()
            self._out.write(json.dumps(record) + "\n")

    def run(self, message: RunInference, agent: Identity) -> bool:
        resources, settings = self.resources, self.resources.settings
        with busy(resources.db, [agent.agent_id]):
            with resources.db() as session:
                attempt = evaluation_repo.claim_run(
                    session,
                    message.evaluation_id,
                    agent_id=agent.agent_id,
                    lease_s=settings.claim_lease_seconds,
                    live_within_s=liveness.live_within_s(session, settings),
                )
            if attempt is None:
                return False  # a duplicate delivery: the real task measures nothing either
            prefix = attempt_prefix(message.run_id, attempt)
            keys = store_attempt(resources.store, prefix, {}, self.measurement(agent))
            with resources.db() as session:
                moved = evaluation_repo.complete_attempt(
                    session, message.evaluation_id, attempt, agent_id=agent.agent_id
                )
        if moved:
            completed = completion_message(message, agent.agent_id, prefix, keys)
            self.publish(queues.RUN_COMPLETED, completed, None)
        # As the inference task does after a run: the next evaluations in turn may go.
        fair_order.release_after_run(resources.db, settings, self.publish)
        return True

    def measurement(self, agent: Identity) -> Measurement:
        document = dict(self.template)
        document["agent"] = {"id": agent.agent_id, "settings": {"simulated": True}}
        document["warnings"] = [*document.get("warnings", []), SIMULATED_WARNING]
        return Measurement.from_dict(document)

    def close(self) -> None:
        for runner in self._runners.values():
            runner.shutdown(wait=True)
        self._out.close()


def run_deliveries(
    args: argparse.Namespace,
    agents: list[Identity],
    deliveries: Any,
    registered: Any,
) -> None:
    """The runner process: registers the identities, runs what the receiving process
    hands it, until it hands None (or the receiver is gone)."""
    # The agents' runs stand for other machines' work: the CPU their side of a run takes
    # here (the claim, the store, the publish) is not the control plane's host's. At the
    # lowest priority they take what the API, scheduler and aggregator leave, rather than
    # take turns with them; the load they put on Postgres and Redis is still all real.
    os.nice(args.nice)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the receiver ends this one
    receiver = os.getppid()
    template = json.loads(Path(args.template).read_text())
    template.pop("log_keys", None)
    register(agents)
    registered.set()
    ids = [a.agent_id for a in agents]
    runs = SimulatedRuns(agents, template, Path(args.out))
    try:
        while True:
            try:
                delivery = deliveries.get(timeout=1.0)
            except queue.Empty:
                if os.getppid() != receiver:
                    break  # the receiver died without saying so
                continue
            if delivery is None:
                break
            runs.hand(delivery)
    finally:
        runs.close()
        with runtime.db() as session:
            evaluation_repo.mark_agents_stopped(session, ids)


def serve(args: argparse.Namespace) -> None:
    """Receive and heartbeat in this process, run in a child: the receive loop and the
    heartbeat of a real agent run on a machine of its own, so here they must not wait
    for the GIL behind their identities' runs (that wait measured 2.1 s p50 of a
    fan-out's dispatch, all of it simulation), nor for the CPU at the runs' priority (a
    late heartbeat takes its agents out of the next fan-out)."""
    agents = identities(args.first, args.count, os.getpid())
    # Forked before this process opens a connection or starts a thread.
    context = multiprocessing.get_context("fork")
    deliveries = context.Queue()
    registered = context.Event()
    runner = context.Process(
        target=run_deliveries, args=(args, agents, deliveries, registered), daemon=False
    )
    runner.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def on_message(body: Any, message: KombuMessage) -> None:
        # Acked at once: the runs are the child's, one thread per identity (a real agent
        # acks late; none of these dies mid-run).
        delivered_at = time.time()
        headers = message.headers or {}
        deliveries.put(
            Delivery(
                payload=body[0][0] if isinstance(body, list) else body,
                queue=str(message.delivery_info.get("routing_key") or ""),
                published_at=float(headers.get(queues.PUBLISHED_AT_HEADER) or 0.0),
                delivered_at=delivered_at,
            )
        )
        message.ack()

    stop_file = Path(args.stop_file)
    try:
        while not registered.wait(0.5):
            if not runner.is_alive():
                raise RuntimeError(f"the runner of {agents[0].hostname}.. exited at start")
        ids = [a.agent_id for a in agents]
        beat = threading.Thread(
            target=heartbeat_loop, args=(ids, args.heartbeat, stop), daemon=True
        )
        beat.start()
        app = make_celery(runtime.settings())
        # No message is published with a priority, so each lands in its queue's base list:
        # watching that one, not kombu's four per queue, makes each BRPOP of this consumer
        # (51 queues) name 51 keys rather than 204.
        app.conf.broker_transport_options = {
            **app.conf.broker_transport_options,
            "priority_steps": [0],
        }
        with app.connection_for_read() as connection:
            consumer = Consumer(
                connection,
                queues=consumer_queues(agents),
                callbacks=[on_message],
                accept=["json"],
                prefetch_count=args.prefetch,
            )
            with consumer:
                Path(args.ready_file).write_text(str(len(agents)))
                while not stop.is_set() and not stop_file.exists():
                    try:
                        connection.drain_events(timeout=0.5)
                    except TimeoutError:
                        continue
    finally:
        stop.set()
        deliveries.put(None)
        runner.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--first", type=int, required=True, help="index of the first identity")
    parser.add_argument("--count", type=int, required=True, help="identities in this process")
    parser.add_argument("--template", required=True, help="a measurement.json to replay")
    parser.add_argument("--out", required=True, help="JSON lines of consumed messages")
    parser.add_argument("--ready-file", required=True)
    parser.add_argument("--stop-file", required=True)
    parser.add_argument("--heartbeat", type=float, default=1.0)
    parser.add_argument("--prefetch", type=int, default=4)
    parser.add_argument(
        "--nice", type=int, default=19, help="niceness added to this process (0: none)"
    )
    args = parser.parse_args()
    if args.count < 1:
        parser.error(f"--count: at least 1, got {args.count}")
    logging.basicConfig(level=logging.WARNING)
    serve(args)


if __name__ == "__main__":
    main()
