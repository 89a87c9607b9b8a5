"""The control plane at scale: N evaluations over M simulated agents on a throw-away stack.

Starts the real API, scheduler, preprocess worker and aggregator on a fresh Postgres
database and a Redis database of its own (tests/support/ephemeral.py), then M simulated
agents (benchmarks/scale_agents.py: many identities per light process, each registering,
heartbeating in batches and consuming its shared, host and direct queues). It submits
N evaluations through GraphQL, part as fan-outs over every agent (one evaluation per
agent, each on its agent's direct queue) and the rest as plain submissions (the shared
queue), from ``--clients`` concurrent clients, and prints one table:

- submissions/s: evaluations accepted per second of the submitting window (and requests/s);
- dispatch latency p50/p99 (defined under the table);
- sweeper pass: the wall time of ``sweeper.find_stalled`` (the queries and judgement of
  the pass the scheduler's sweeper makes every interval, its dispatches left out) against
  this database, during the run and once at the end;
- Postgres connections to this database (the most seen, sampled every second) and the
  bound the pools set; the rows of its tables;
- Redis memory (the server's, shared with anything else on it) and this database's keys;
- lost (accepted, no row), duplicated (runs beyond one per evaluation, or two claims),
  stuck (not final at the deadline) and failed evaluations.

The agents measure nothing (the null backend's run is replayed from one real LoadGen run
made at start): this measures the control plane, not inference. A verdict is printed per
target only where the inputs reach the target's scale (10,000 evaluations, 200 agents).
Needs Postgres and Redis (BENCHSTACK_TEST_POSTGRES / BENCHSTACK_TEST_REDIS override where).

    PYTHONPATH=$PWD python benchmarks/scale.py                  # 10,000 over 200 agents
    PYTHONPATH=$PWD python benchmarks/scale.py --small          # 200 over 20, seconds
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import text

from services.api.auth import create_token
from services.core.stored_report import load_loadgen_report
from services.stack.manager import ServiceSpec, Stack, default_services
from shared import queues
from shared.db.session import session_scope
from tests.support.ephemeral import EphemeralStack

if TYPE_CHECKING:
    from shared.settings import Settings

AGENTS_SCRIPT = Path(__file__).with_name("scale_agents.py")
# Each simulated agents' process shares one pool of this size between its identities (a
# real agent runs one evaluation at a time and holds a connection or two): the server's
# 100 connections are the stack's, not 25 threads' each.
AGENT_POOL_SIZE = 5
AGENT_POOL_ENV = {
    "BENCHSTACK_DATABASE_POOL_SIZE": str(AGENT_POOL_SIZE),
    "BENCHSTACK_DATABASE_MAX_OVERFLOW": "0",
}
SUBMIT = """mutation($input: SubmitEvaluationInput!) { submitEvaluation(input: $input) {
  __typename ... on Evaluation { id } ... on Comparison { rows { evaluationId } }
  ... on UserError { message } } }"""
FINAL = ("SUCCEEDED", "FAILED", "CANCELLED")
# The scale the targets are stated at; a verdict needs inputs at least this big.
TARGET_EVALUATIONS = 10_000
TARGET_AGENTS = 200
DISPATCH_P99_TARGET_S = 1.0
SWEEP_TARGET_S = 1.0
DISPATCH_DEFINITION = (
    "dispatch latency: from the client sending the submission to a simulated agent "
    "taking the evaluation's RunInference off the broker (its first delivery); it spans "
    "the API, the outbox publish, the scheduler's plan (shards reused) and the broker"
)
# Each process's SQLAlchemy pool: pool_size + max_overflow (shared/db/session.py).
TABLES = ("evaluations", "shards", "runs", "metrics", "agents", "workers")


@dataclass
class Submitted:
    sent_at: float  # time.time() as the request left
    ids: list[str]
    fan_out: bool = False
    answered_at: float = 0.0  # time.time() as the API's answer arrived


@dataclass
class Samples:
    """What is sampled while the run goes on."""

    connections: list[int] = field(default_factory=list)
    redis_memory: list[int] = field(default_factory=list)
    sweeps: list[tuple[int, float]] = field(default_factory=list)  # (rows, seconds)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def template_measurement(work: Path) -> Path:
    """One real null-backend LoadGen run (embedded, its own SQLite file and folder): the
    measurement the simulated agents replay."""
    from services.core.request import RunRequest
    from services.embedded.bench import run_bench
    from shared.settings import Settings

    settings = Settings(
        data_dir=work / "template",
        database_url=f"sqlite:///{work / 'template' / 'template.db'}",
        s3_endpoint="",
        host_slot_dir=work / "template-host",
    )
    request = RunRequest(
        model="resnet18", framework="null", settings={"min_duration_s": 0.05}, samples=8
    )
    report = run_bench(request, settings)
    prefix = load_loadgen_report(report).log_prefix
    stored = settings.data_dir / "objects" / prefix / "measurement.json"
    if not stored.exists():  # the local store's layout: find it rather than assume it
        stored = next(settings.data_dir.rglob("measurement.json"))
    target = work / "template-measurement.json"
    target.write_text(stored.read_text())
    return target


def start_agents(
    stack: EphemeralStack, work: Path, template: Path, agents: int, processes: int
) -> list[subprocess.Popen[bytes]]:
    per = math.ceil(agents / processes)
    started = []
    for index, first in enumerate(range(0, agents, per)):
        count = min(per, agents - first)
        argv = [
            sys.executable,
            str(AGENTS_SCRIPT),
            f"--first={first}",
            f"--count={count}",
            f"--template={template}",
            f"--out={work / f'consumed-{index}.jsonl'}",
            f"--ready-file={work / f'ready-{index}'}",
            f"--stop-file={work / 'stop'}",
            f"--heartbeat={stack.heartbeat_s}",
        ]
        log = (work / f"agents-{index}.log").open("wb")
        env = {**os.environ, **stack.env(), **AGENT_POOL_ENV}
        started.append(subprocess.Popen(argv, env=env, stdout=log, stderr=log))
    deadline = time.monotonic() + 120
    while not all((work / f"ready-{i}").exists() for i in range(len(started))):
        dead = [p for p in started if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            logs = "\n".join(p.read_text()[-2000:] for p in work.glob("agents-*.log"))
            raise RuntimeError(f"simulated agents did not start; their logs:\n{logs}")
        time.sleep(0.2)
    return started


async def submit_all(
    url: str, token: str, jobs: list[dict[str, Any]], clients: int, rate: float = 0.0
) -> tuple[list[Submitted], list[str], float]:
    """Every job from ``clients`` concurrent clients, each job sent no earlier than its
    evaluations' place at ``rate`` evaluations/s (0: as fast as the clients go; a fan-out
    counts as one evaluation per agent it reaches); returns what was accepted, the
    refusals, and the window's seconds."""
    accepted: list[Submitted] = []
    refused: list[str] = []
    pending = list(reversed(jobs))
    headers = {"Authorization": f"Bearer {token}"}
    # A pooled connection idle past uvicorn's keep-alive (5 s) may be closed by the API as
    # it is reused: drop idle ones well before.
    limits = httpx.Limits(keepalive_expiry=1.0)
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=300, limits=limits
    ) as client:
        start = time.perf_counter()
        offered = 0  # evaluations whose requests have been sent

        async def worker() -> None:
            nonlocal offered
            while pending:
                job = pending.pop()
                if rate > 0:
                    due = start + offered / rate
                    offered += int(job.get("_evaluations", 1))
                    await asyncio.sleep(max(0.0, due - time.perf_counter()))
                sent_at = time.time()
                body = {k: v for k, v in job.items() if not k.startswith("_")}
                try:
                    response = await client.post(
                        "/graphql", json={"query": SUBMIT, "variables": {"input": body}}
                    )
                except httpx.TransportError as exc:
                    # Not retried: the API may have stored it (the outbox) before the
                    # answer was lost; its evaluations still run, uncounted here.
                    refused.append(f"transport error: {exc.__class__.__name__}: {exc}")
                    continue
                result = (response.json().get("data") or {}).get("submitEvaluation")
                if result is None:
                    refused.append(response.text[:300])
                elif result["__typename"] == "Evaluation":
                    accepted.append(Submitted(sent_at, [result["id"]], answered_at=time.time()))
                elif result["__typename"] == "Comparison":
                    ids = [row["evaluationId"] for row in result["rows"]]
                    accepted.append(Submitted(sent_at, ids, fan_out=True, answered_at=time.time()))
                else:
                    refused.append(str(result))

        await asyncio.gather(*(worker() for _ in range(clients)))
        return accepted, refused, time.perf_counter() - start


def jobs_for(evaluations: int, agents: int, fan_out_share: float) -> list[dict[str, Any]]:
    """Fan-outs over every agent for ``fan_out_share`` of the evaluations, plain
    submissions for the rest, interleaved."""
    base = {
        "model": "resnet18",
        "framework": "null",
        "scenario": "offline",
        "settings": {"minDurationS": 0.05},
        "samples": 8,
    }
    fan_outs = int(evaluations * fan_out_share) // agents
    plain = evaluations - fan_outs * agents
    jobs: list[dict[str, Any]] = [dict(base) for _ in range(plain)]
    every = max(1, len(jobs) // (fan_outs + 1))
    for index in range(fan_outs):
        fan_out = {**base, "fanOut": True, "_evaluations": agents}
        jobs.insert(min(len(jobs), (index + 1) * every + index), fan_out)
    return jobs


class Sampler:
    """Connections, Redis memory and sweeper passes, sampled on a thread while the run
    goes on."""

    def __init__(self, stack: EphemeralStack, sweep: Callable[[], tuple[int, float]]) -> None:
        self.stack = stack
        self.sweep = sweep
        self.samples = Samples()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        tick = 0
        while not self._stop.wait(1.0):
            self.samples.connections.append(connections(self.stack))
            self.samples.redis_memory.append(redis_memory(self.stack)[0])
            tick += 1
            if tick % 5 == 0:
                self.samples.sweeps.append(self.sweep())


def connections(stack: EphemeralStack) -> int:
    with session_scope(stack.admin_url) as session:
        return int(
            session.scalar(
                text("SELECT count(*) FROM pg_stat_activity WHERE datname = :name"),
                {"name": stack.database_name},
            )
            or 0
        )


def redis_memory(stack: EphemeralStack) -> tuple[int, int]:
    """The server's used memory (bytes) and this database's keys."""
    import redis

    client = redis.Redis.from_url(stack.broker_url)
    try:
        return int(client.info("memory")["used_memory"]), int(client.dbsize())
    finally:
        client.close()


def sweeper_pass(stack: EphemeralStack) -> Callable[[], tuple[int, float]]:
    """The sweeper's pass as the scheduler's sweeper makes it (``sweeper.find_stalled``
    with the broker's backlog, its queries and judgement), timed, in a transaction rolled
    back after: this process must not dispatch beside the real sweeper (each dispatch
    counts toward failing an evaluation). With the number of evaluation rows it went over."""
    from services.scheduler.sweeper import find_stalled
    from shared.celery_app import make_celery, queue_backlog
    from shared.db.clock import utcnow

    settings = _settings_of(stack.env())
    app = make_celery(settings)

    def sweep() -> tuple[int, float]:
        with session_scope(stack.database_url) as session:
            rows = int(session.scalar(text("SELECT count(*) FROM evaluations")) or 0)
            started = time.perf_counter()
            find_stalled(session, settings, utcnow(), lambda queue: queue_backlog(app, queue))
            spent = time.perf_counter() - started
            session.rollback()
        return rows, spent

    return sweep


def _settings_of(env: dict[str, str]) -> Settings:
    """The settings the services read from their BENCHSTACK_* variables, read the same way
    (JSON fields such as BENCHSTACK_USER_LIMIT_OVERRIDES included)."""
    from shared.settings import Settings

    prefix = "BENCHSTACK_"
    saved = dict(os.environ)
    try:
        for key in [k for k in os.environ if k.startswith(prefix)]:
            del os.environ[key]
        os.environ.update({k: v for k, v in env.items() if k.startswith(prefix)})
        return Settings()
    finally:
        os.environ.clear()
        os.environ.update(saved)


@dataclass
class Outcome:
    accepted: int
    requests: int
    refused: list[str]
    submit_s: float
    latencies: list[float]
    fan_out_latencies: list[float]
    plain_latencies: list[float]
    parts: dict[str, list[float]]  # dispatch latency split (judge)
    # Per request: from sending it to the API's answer (the rows stored, the plan asked).
    answer_latencies: list[float]
    fan_out_answer_latencies: list[float]
    lost: int
    duplicated: int
    stuck: int
    failed: list[str]
    rows: dict[str, int]
    samples: Samples
    final_sweep: tuple[int, float]
    redis_end: tuple[int, int]
    pool_bound: int
    cpu_s: dict[str, float]


def judge(stack: EphemeralStack, accepted: list[Submitted], work: Path) -> dict[str, Any]:
    """Lost, duplicated, stuck and failed, from the database and the agents' records."""
    sent_at = {i: s.sent_at for s in accepted for i in s.ids}
    with session_scope(stack.database_url) as session:
        states = {r[0]: r[1] for r in session.execute(text("SELECT id, state FROM evaluations"))}
        reasons = session.execute(
            text("SELECT id, reason FROM evaluations WHERE state <> 'SUCCEEDED'")
        ).all()
        runs = {
            r[0]: int(r[1])
            for r in session.execute(
                text("SELECT evaluation_id, count(*) FROM runs GROUP BY evaluation_id")
            )
        }
        rows = {t: int(session.scalar(text(f"SELECT count(*) FROM {t}")) or 0) for t in TABLES}
        # When the scheduler's task started on each evaluation's message (its span).
        task_started = {
            r[0]: int(r[1]) / 1e9
            for r in session.execute(
                text(
                    "SELECT evaluation_id, min(start_ns) FROM request_spans "
                    "WHERE name = :name GROUP BY evaluation_id"
                ),
                {"name": queues.PLAN_EVALUATION},
            )
        }
    first: dict[str, dict[str, Any]] = {}  # each evaluation's first delivery
    claims: dict[str, int] = {}
    for path in work.glob("consumed-*.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            eid = record["evaluation_id"]
            if eid not in first or record["consumed_at"] < first[eid]["consumed_at"]:
                first[eid] = record
            claims[eid] = claims.get(eid, 0) + int(record["claimed"])
    in_fan_outs = {i for s in accepted if s.fan_out for i in s.ids}
    # A fan-out's members are planned by the task its first member's message started.
    planned_at = {
        i: min(task_started[m] for m in s.ids if m in task_started)
        for s in accepted
        if any(m in task_started for m in s.ids)
        for i in s.ids
    }
    dispatched = [(i, t, first[i]) for i, t in sent_at.items() if i in first]
    latencies = [r["consumed_at"] - t for _, t, r in dispatched]
    fan_out_latencies = [r["consumed_at"] - t for i, t, r in dispatched if i in in_fan_outs]
    plain_latencies = [r["consumed_at"] - t for i, t, r in dispatched if i not in in_fan_outs]
    # Where the time went: up to the scheduler's task starting (API, broker, the
    # scheduler's queue), its plan and publish, then the broker and the agent process's
    # receive loop, then waiting for a busy agent.
    stamped = [(i, t, r) for i, t, r in dispatched if r.get("published_at")]
    planned = [(t, r, planned_at[i]) for i, t, r in stamped if i in planned_at]
    parts = {
        "to the scheduler's task": [p - t for t, _, p in planned],
        "scheduler's plan and publish": [r["published_at"] - p for _, r, p in planned],
        "broker to agent process": [r["delivered_at"] - r["published_at"] for _, _, r in stamped],
        "agent busy": [r["consumed_at"] - r["delivered_at"] for _, _, r in stamped],
    }
    return {
        "latencies": latencies,
        "fan_out_latencies": fan_out_latencies,
        "plain_latencies": plain_latencies,
        "parts": parts,
        "lost": sum(1 for i in sent_at if i not in states),
        "duplicated": sum(
            max(0, runs.get(i, 0) - 1) + max(0, claims.get(i, 0) - 1) for i in sent_at
        ),
        "stuck": sum(1 for i in sent_at if states.get(i) not in (*FINAL, None)),
        "failed": [f"{i}: {states[i]} {r}" for i, r in reasons if i in sent_at],
        "rows": rows,
    }


def wait_final(stack: EphemeralStack, timeout_s: float) -> None:
    """Until no evaluation of this database is left unfinished, or the deadline."""
    deadline = time.monotonic() + timeout_s
    unfinished = text(
        "SELECT count(*) FROM evaluations WHERE state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')"
    )
    while time.monotonic() < deadline:
        with session_scope(stack.database_url) as session:
            if not session.scalar(unfinished):
                return
        time.sleep(1.0)


def warm_up(stack: EphemeralStack, token: str) -> None:
    """One evaluation through every stage first: its dataset's shard is then stored and
    every later plan reuses it, so the table is the control plane's, not preprocessing's."""
    accepted, refused, _ = asyncio.run(submit_all(stack.api_url, token, jobs_for(1, 1, 0.0), 1))
    if refused or not accepted:
        raise RuntimeError(f"the warm-up evaluation was refused: {refused}")
    wait_final(stack, 120)


def run(args: argparse.Namespace, work: Path) -> Outcome:
    template = template_measurement(work)
    stack = EphemeralStack(
        heartbeat_s=args.heartbeat,
        # A local folder as the object store: S3's server would spend this host's CPU
        # on work that is not the control plane's.
        extra_env={
            "BENCHSTACK_S3_ENDPOINT": "",
            "BENCHSTACK_API_WORKERS": str(args.api_workers),
            # One user submits every evaluation here: lift its per-user limits (queued,
            # agent-seconds) as an operator would for a load test.
            "BENCHSTACK_USER_LIMIT_OVERRIDES": json.dumps(
                {"scale": {"user_max_queued": 0, "user_max_agent_seconds": 0}}
            ),
        },
    )
    agents: list[subprocess.Popen[bytes]] = []
    stack.start_servers()
    try:
        services = [
            s
            for s in default_services(
                port=stack.api_port, frameworks=["null"], preprocess_concurrency=1
            )
            if not s.name.startswith("inference")
        ]
        service_stack = stack.start_services(services)
        agents = start_agents(stack, work, template, args.agents, args.agent_processes)
        stack.wait_for_agents(args.agents, timeout_s=120)
        with session_scope(stack.database_url) as session:
            token = create_token(session, user_name="scale")
        warm_up(stack, token)
        jobs = jobs_for(args.evaluations, args.agents, args.fan_out_share)
        sweep = sweeper_pass(stack)
        with Sampler(stack, sweep) as sampler:
            accepted, refused, submit_s = asyncio.run(
                submit_all(stack.api_url, token, jobs, args.clients, args.rate)
            )
            ids = {i for s in accepted for i in s.ids}
            wait_final(stack, args.timeout)
        final_sweep = sweep()
        judged = judge(stack, accepted, work)
        cpu_s = cpu_seconds(service_stack, agents)
        return Outcome(
            accepted=len(ids),
            requests=len(jobs),
            refused=refused,
            submit_s=submit_s,
            latencies=judged["latencies"],
            fan_out_latencies=judged["fan_out_latencies"],
            plain_latencies=judged["plain_latencies"],
            parts=judged["parts"],
            answer_latencies=[s.answered_at - s.sent_at for s in accepted if not s.fan_out],
            fan_out_answer_latencies=[s.answered_at - s.sent_at for s in accepted if s.fan_out],
            lost=judged["lost"],
            duplicated=judged["duplicated"],
            stuck=judged["stuck"],
            failed=judged["failed"],
            rows=judged["rows"],
            samples=sampler.samples,
            final_sweep=final_sweep,
            redis_end=redis_memory(stack),
            pool_bound=pool_bound(services, len(agents), args.api_workers),
            cpu_s=cpu_s,
        )
    finally:
        (work / "stop").touch()
        for process in agents:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
        stack.close()


def cpu_seconds(services: Stack, agents: list[subprocess.Popen[bytes]]) -> dict[str, float]:
    """CPU seconds each service (with its children) and the agents spent since they
    started: where the host's time went (the warm-up included)."""
    import psutil

    def tree(pid: int) -> float:
        try:
            process = psutil.Process(pid)
            family = [process, *process.children(recursive=True)]
        except psutil.NoSuchProcess:
            return 0.0
        total = 0.0
        for member in family:
            try:
                times = member.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
        return total

    spent = {service.name: tree(service.pid) for service in services.running()}
    spent["simulated agents"] = sum(tree(p.pid) for p in agents)
    return spent


def pool_bound(services: list[ServiceSpec], agent_processes: int, api_workers: int) -> int:
    """The most connections the pools allow (shared/db/session.py): per process its two
    engines (transactions, autocommit reads), each pool_size + max_overflow, and in each
    API process its event loop's pool too (shared/db/loop_reads.py: BLOCKING_THREADS,
    as much again in overflow)."""
    from services.api.context import BLOCKING_THREADS
    from shared.settings import Settings

    settings = Settings()
    per_engine = settings.database_pool_size + settings.database_max_overflow
    workers = [s for s in services if s.name != "api"]
    # The preprocess worker: its parent and one prefork child, each with its pools.
    processes = len(workers) + 1 + api_workers
    agents = agent_processes * 2 * AGENT_POOL_SIZE
    return processes * 2 * per_engine + api_workers * 2 * BLOCKING_THREADS + agents


def _p50_p99(values: list[float], of: str = "evaluations") -> str:
    if not values:
        return "none"
    p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
    return f"{p50 * 1000:.0f} ms / {p99 * 1000:.0f} ms ({len(values)} {of})"


def print_table(args: argparse.Namespace, outcome: Outcome) -> None:
    at_scale = args.evaluations >= TARGET_EVALUATIONS and args.agents >= TARGET_AGENTS
    lat = outcome.latencies
    p50 = percentile(lat, 0.50) if lat else math.nan
    p99 = percentile(lat, 0.99) if lat else math.nan
    sweeps = [s for _, s in outcome.samples.sweeps]
    rows_at_end, end_sweep_s = outcome.final_sweep
    max_conn = max(outcome.samples.connections, default=0)

    def verdict(ok: bool, scale_ok: bool = at_scale) -> str:
        if not scale_ok:
            return "no verdict: below the target's scale"
        return "met" if ok else "NOT MET"

    print(
        "benchmarks/scale.py: the CONTROL PLANE at scale; simulated agents measure nothing "
        "(not inference)"
    )
    print(
        f"{args.evaluations} evaluations ({args.fan_out_share:.0%} as fan-outs over every "
        f"agent), {args.agents} simulated agents in {args.agent_processes} processes, "
        f"{args.clients} clients, {args.api_workers} API process(es), offered "
        + (f"{args.rate:g} evaluations/s" if args.rate else "as fast as accepted")
    )
    table = [
        (
            "accepted evaluations",
            f"{outcome.accepted} of {args.evaluations}; {len(outcome.refused)} requests "
            "refused or failed",
            "",
        ),
        (
            "submissions/s",
            f"{outcome.accepted / outcome.submit_s:.1f} evaluations/s, "
            f"{outcome.requests / outcome.submit_s:.1f} requests/s ({outcome.submit_s:.1f} s)",
            "",
        ),
        (
            "dispatch latency p50 / p99",
            f"{p50 * 1000:.0f} ms / {p99 * 1000:.0f} ms ({len(lat)} evaluations)",
            f"p99 < {DISPATCH_P99_TARGET_S:g} s: {verdict(p99 < DISPATCH_P99_TARGET_S)}",
        ),
        ("  of fan-outs' members", _p50_p99(outcome.fan_out_latencies), ""),
        ("  of plain submissions", _p50_p99(outcome.plain_latencies), ""),
        *((f"  part: {name}", _p50_p99(values), "") for name, values in outcome.parts.items()),
        ("API's answer p50 / p99", _p50_p99(outcome.answer_latencies, "requests"), ""),
        ("  to a fan-out", _p50_p99(outcome.fan_out_answer_latencies, "requests"), ""),
        (
            "sweeper pass (during run)",
            f"median {percentile(sweeps, 0.5) * 1000:.0f} ms, max {max(sweeps) * 1000:.0f} ms "
            f"({len(sweeps)} passes)"
            if sweeps
            else "none sampled",
            "",
        ),
        (
            "sweeper pass (at end)",
            f"{end_sweep_s * 1000:.0f} ms over {rows_at_end} rows",
            f"< {SWEEP_TARGET_S:g} s at {TARGET_EVALUATIONS} rows: "
            + verdict(end_sweep_s < SWEEP_TARGET_S, rows_at_end >= TARGET_EVALUATIONS),
        ),
        (
            "Postgres connections",
            f"max {max_conn} (the pools allow {outcome.pool_bound}; "
            f"{args.agent_processes} agent processes, not {args.agents} agents)",
            f"bounded: {verdict(max_conn <= outcome.pool_bound)}",
        ),
        ("Postgres rows", ", ".join(f"{k} {v}" for k, v in outcome.rows.items()), ""),
        (
            "Redis memory",
            f"max {max(outcome.samples.redis_memory, default=0) / 2**20:.1f} MiB, end "
            f"{outcome.redis_end[0] / 2**20:.1f} MiB (the server's); {outcome.redis_end[1]} "
            "keys left in this database",
            "",
        ),
        (
            "lost / duplicated / stuck",
            f"{outcome.lost} / {outcome.duplicated} / {outcome.stuck}",
            "0 / 0 / 0: " + verdict(outcome.lost == outcome.duplicated == outcome.stuck == 0, True),
        ),
        ("failed", str(len(outcome.failed)), ""),
        (
            "CPU seconds",
            ", ".join(f"{name} {spent:.0f}" for name, spent in outcome.cpu_s.items()),
            "",
        ),
    ]
    width = max(len(name) for name, _, _ in table)
    for name, value, target in table:
        print(f"  {name:<{width}}  {value}" + (f"  [{target}]" if target else ""))
    print(DISPATCH_DEFINITION)
    for line in outcome.failed[:5] + outcome.refused[:5]:
        print(f"  {line[:300]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--evaluations", type=int, default=TARGET_EVALUATIONS)
    parser.add_argument("--agents", type=int, default=TARGET_AGENTS)
    parser.add_argument("--agent-processes", type=int, default=0, help="0: one per 25 agents")
    parser.add_argument("--fan-out-share", type=float, default=0.5)
    parser.add_argument("--clients", type=int, default=4, help="concurrent submitting clients")
    parser.add_argument(
        "--rate", type=float, default=0.0, help="evaluations/s offered; 0: as fast as it takes"
    )
    parser.add_argument("--api-workers", type=int, default=2)
    parser.add_argument("--heartbeat", type=float, default=2.0, help="agents' heartbeat, s")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for all")
    parser.add_argument("--small", action="store_true", help="200 evaluations, 20 agents")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.small:
        args.evaluations, args.agents = 200, 20
    for name, value, low, high in (
        ("--evaluations", args.evaluations, 1, 100_000),
        ("--agents", args.agents, 1, 2_000),
        ("--clients", args.clients, 1, 256),
        ("--api-workers", args.api_workers, 1, 16),
        ("--rate", args.rate, 0, 100_000),
    ):
        if not low <= value <= high:
            parser.error(f"{name}: {value} is outside {low}..{high}")
    if not 0 <= args.fan_out_share <= 1:
        parser.error(f"--fan-out-share: {args.fan_out_share} is outside 0..1")
    args.agent_processes = args.agent_processes or max(1, math.ceil(args.agents / 25))
    if not 1 <= args.agent_processes <= args.agents:
        parser.error(f"--agent-processes: {args.agent_processes} is outside 1..--agents")
    # A SIGTERM (e.g. from `timeout`) must still run the cleanup, or services linger.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="benchstack-scale-") as tmp:
        outcome = run(args, Path(tmp))
    print_table(args, outcome)
    if args.json:
        Path(args.json).write_text(json.dumps(figures(outcome), indent=2))
    if outcome.lost or outcome.duplicated or outcome.stuck:
        sys.exit(1)


def figures(outcome: Outcome) -> dict[str, Any]:
    lat = outcome.latencies
    return {
        "accepted": outcome.accepted,
        "submissions_per_s": outcome.accepted / outcome.submit_s,
        "dispatch_p50_s": percentile(lat, 0.5) if lat else None,
        "dispatch_p99_s": percentile(lat, 0.99) if lat else None,
        "dispatched": len(lat),
        "fan_out_dispatch_p99_s": percentile(outcome.fan_out_latencies, 0.99)
        if outcome.fan_out_latencies
        else None,
        "dispatch_parts_p50_p99_s": {
            name: [percentile(v, 0.5), percentile(v, 0.99)] if v else None
            for name, v in outcome.parts.items()
        },
        "sweeper_pass_s": outcome.final_sweep[1],
        "sweeper_rows": outcome.final_sweep[0],
        "sweeper_passes_during_s": [s for _, s in outcome.samples.sweeps],
        "postgres_connections_max": max(outcome.samples.connections, default=0),
        "postgres_connections_bound": outcome.pool_bound,
        "postgres_rows": outcome.rows,
        "redis_used_memory_max": max(outcome.samples.redis_memory, default=0),
        "redis_keys_left": outcome.redis_end[1],
        "lost": outcome.lost,
        "duplicated": outcome.duplicated,
        "stuck": outcome.stuck,
        "failed": len(outcome.failed),
    }


if __name__ == "__main__":
    main()
