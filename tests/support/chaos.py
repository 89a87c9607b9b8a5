"""Fault scenarios against a whole stack on its own Postgres and Redis: kill -9 a worker,
restart the broker, stop the database, then count what became of every evaluation.

Used by tests/integration/test_chaos.py (short outages, fast sweeper settings) and by
benchmarks/chaos.py (the full campaign with the default settings, printed as a table).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from services.stack.manager import ServiceSpec, default_services
from tests.support.ephemeral import EphemeralStack
from tests.support.own_servers import OwnPostgres, OwnRedis
from tests.support.tcp_proxy import TcpProxy

FINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}
# Seconds, for tests: a claim lapses in 3 s, the sweeper looks every second and calls an
# evaluation stalled after 4 s without progress.
FAST_RECOVERY = {
    "BENCHSTACK_CLAIM_LEASE_SECONDS": "3",
    "BENCHSTACK_SWEEP_INTERVAL_SECONDS": "1",
    "BENCHSTACK_STALL_SECONDS": "4",
    "BENCHSTACK_MAX_DISPATCHES": "6",
}

SUBMIT = """
mutation($input: SubmitEvaluationInput!) {
  submitEvaluation(input: $input) {
    __typename ... on Evaluation { id } ... on UserError { message }
  }
}
"""


class DependencyDown(RuntimeError):
    """The API answered 503: a server it needs is not (yet) reachable."""


@dataclass
class Outcome:
    """What became of the evaluations of one scenario."""

    scenario: str
    attempted: int
    completed: int = 0  # SUCCEEDED
    failed: list[str] = field(default_factory=list)  # reasons of the FAILED ones
    lost: int = 0  # submitted, never seen again
    duplicated: int = 0  # runs stored beyond one per evaluation
    stuck: int = 0  # not terminal when the scenario gave up
    recovery_s: float | None = None  # from the fault's end to the last evaluation terminal
    stale_reasons: list[str] = field(default_factory=list)  # reasons left on SUCCEEDED ones
    hostile: str = ""  # what became of a hostile caller's part (chaos_attacks.py)
    hostile_answers: dict[str, int] = field(default_factory=dict)  # its answers, by kind

    def row(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "attempts": self.attempted,
            "completed": self.completed,
            "failed": len(self.failed),
            "lost": self.lost,
            "duplicated": self.duplicated,
            "stuck": self.stuck,
            "stale_reasons": len(self.stale_reasons),
            "recovery_s": None if self.recovery_s is None else round(self.recovery_s, 1),
        }


class ChaosStack:
    """An ephemeral stack on its own servers, with handles to break each part."""

    def __init__(self, extra_env: dict[str, str] | None = None) -> None:
        self.redis = OwnRedis()
        self.postgres = OwnPostgres()
        self.redis.start()
        self.postgres.init()
        self.stack = EphemeralStack(
            admin_url=self.postgres.admin_url,
            redis_base=self.redis.url,
            redis_db=0,
            extra_env=extra_env or {},
        )
        self.stack.start_servers()
        # The stack reaches S3 through a proxy, so a scenario can take it away (and give
        # it back) without moto losing the objects it holds in memory.
        self.s3 = TcpProxy(self.stack.s3_port)
        self.s3.up()
        self.stack.extra_env["BENCHSTACK_S3_ENDPOINT"] = f"127.0.0.1:{self.s3.port}"
        self.group = self.stack.start_services(
            default_services(
                port=self.stack.api_port, frameworks=["null"], preprocess_concurrency=2
            )
        )
        self.stack.wait_for_agents(1)
        self.token = self._token()
        self._replacements = 0

    def _token(self) -> str:
        from services.api.auth import create_token
        from shared.db.session import session_scope

        with session_scope(self.stack.database_url) as session:
            return create_token(session, user_name="chaos", label="chaos")

    def submit(self, **overrides: Any) -> str:
        payload = {
            "model": "resnet18",
            "framework": "null",
            "scenario": "offline",
            "settings": {"minDurationS": 0.5, "targetQps": 2000},
            "samples": 16,
            **overrides,
        }
        response = httpx.post(
            self.stack.api_url + "/graphql",
            json={"query": SUBMIT, "variables": {"input": payload}},
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=60,
        )
        if response.status_code == 503:
            raise DependencyDown(response.text)
        result = response.json()["data"]["submitEvaluation"]
        assert result["__typename"] == "Evaluation", result
        return str(result["id"])

    def submit_when_up(self, *, within_s: float = 15.0, **overrides: Any) -> str:
        """``submit`` once the API answers other than 503 (the database still starting);
        any other refusal, NoMatchingAgent included, fails at once."""
        deadline = time.monotonic() + within_s
        while True:
            try:
                return self.submit(**overrides)
            except DependencyDown:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def pid_of(self, service: str) -> int:
        for running in self.group.running():
            if running.name == service:
                return running.pid
        raise LookupError(f"{service} is not running")

    def kill(self, service: str) -> None:
        """kill -9 of the worker process itself (its children are left to their fate)."""
        os.kill(self.pid_of(service), signal.SIGKILL)

    def replace(self, service: str) -> None:
        """Start a new worker of the same kind, as an operator (or k8s) would."""
        spec = next(
            s
            for s in default_services(
                port=self.stack.api_port, frameworks=["null"], preprocess_concurrency=2
            )
            if s.name == service
        )
        self._replacements += 1
        self.stack.start_services(
            [ServiceSpec(spec.name, spec.argv)], name=f"replacement-{self._replacements}"
        )

    def rows(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        from sqlalchemy import func, select

        from shared.db.evaluations import Evaluation
        from shared.db.models import Run
        from shared.db.session import session_scope

        with session_scope(self.stack.database_url) as session:
            found: dict[str, dict[str, Any]] = {
                e.id: {"state": e.state, "reason": e.reason, "runs": 0}
                for e in session.scalars(select(Evaluation).where(Evaluation.id.in_(ids)))
            }
            counts = session.execute(
                select(Run.evaluation_id, func.count())
                .where(Run.evaluation_id.in_(ids))
                .group_by(Run.evaluation_id)
            )
            for evaluation_id, count in counts:
                found[str(evaluation_id)]["runs"] = int(count)
        return found

    def wait_state(
        self, evaluation_id: str, predicate: Callable[[dict[str, Any]], bool], timeout_s: float = 60
    ) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            row = self.rows([evaluation_id]).get(evaluation_id)
            if row is not None and predicate(row):
                return
            time.sleep(0.1)
        # The services' logs say why (a worker that died at start, a failed flush).
        raise TimeoutError(
            f"{evaluation_id} did not reach the state in {timeout_s:g} s\n{self.logs()}"
        )

    def settle(self, scenario: str, ids: list[str], *, since: float, timeout_s: float) -> Outcome:
        """Wait until every evaluation is terminal (or the timeout), then count."""
        outcome = Outcome(scenario, attempted=len(ids))
        deadline = time.monotonic() + timeout_s
        rows: dict[str, dict[str, Any]] = {}
        while time.monotonic() < deadline:
            try:
                rows = self.rows(ids)
            except Exception:  # the database may still be coming back
                time.sleep(0.5)
                continue
            if len(rows) == len(ids) and all(r["state"] in FINAL for r in rows.values()):
                outcome.recovery_s = time.monotonic() - since
                break
            time.sleep(0.25)
        outcome.lost = len(ids) - len(rows)
        for row in rows.values():
            if row["state"] == "SUCCEEDED":
                outcome.completed += 1
                if row["reason"]:
                    outcome.stale_reasons.append(row["reason"])
            elif row["state"] == "FAILED":
                outcome.failed.append(row["reason"])
            elif row["state"] not in FINAL:
                outcome.stuck += 1
            outcome.duplicated += max(0, row["runs"] - 1)
        return outcome

    def logs(self) -> str:
        return self.stack.logs()

    def empty_object_store(self) -> None:
        """Every object and the bucket itself gone, as a fresh S3 server would have it."""
        from minio import Minio
        from minio.deleteobjects import DeleteObject

        env = self.stack.env()
        client = Minio(
            f"127.0.0.1:{self.stack.s3_port}",
            access_key=env["BENCHSTACK_S3_ACCESS_KEY"],
            secret_key=env["BENCHSTACK_S3_SECRET_KEY"],
            secure=False,
        )
        bucket = env["BENCHSTACK_S3_BUCKET"]
        if client.bucket_exists(bucket):
            objects = client.list_objects(bucket, recursive=True)
            for error in client.remove_objects(
                bucket, (DeleteObject(o.object_name) for o in objects if o.object_name)
            ):
                raise RuntimeError(f"could not empty the bucket: {error}")
            client.remove_bucket(bucket)

    def close(self) -> None:
        self.s3.down()
        self.stack.close()
        self.redis.stop()
        self.postgres.close()


def kill_worker_mid_run(chaos: ChaosStack, service: str, *, timeout_s: float) -> Outcome:
    """kill -9 one worker while its kind of work is under way, start a replacement."""
    if service == "inference":
        # Long enough to be killed mid-measurement.
        evaluation_id = chaos.submit(
            settings={"minDurationS": 4, "targetQps": 150},
            seed=11,
            backendOptions={"service_time_ms": 5},
        )
        chaos.wait_state(evaluation_id, lambda r: r["state"] == "RUNNING", 60)
        time.sleep(2.0)  # measuring now
    elif service == "preprocess":
        evaluation_id = chaos.submit(samples=400, seed=12)
        chaos.wait_state(evaluation_id, lambda r: r["state"] == "PREPROCESSING", 60)
        time.sleep(0.5)
    elif service == "aggregator":
        evaluation_id = chaos.submit(seed=13)
        chaos.wait_state(evaluation_id, lambda r: r["state"] in {"RUNNING", "AGGREGATING"}, 60)
    else:
        evaluation_id = chaos.submit(seed=14)
    chaos.kill(service)
    time.sleep(1.0)
    chaos.replace(service)
    since = time.monotonic()
    return chaos.settle(f"kill -9 {service}", [evaluation_id], since=since, timeout_s=timeout_s)


def restart_broker(chaos: ChaosStack, *, in_flight: int, timeout_s: float) -> Outcome:
    ids = [chaos.submit(seed=100 + i, samples=64) for i in range(in_flight)]
    time.sleep(1.0)
    chaos.redis.restart()  # no persistence: every queued and unacked message is gone
    since = time.monotonic()
    return chaos.settle("Redis restart", ids, since=since, timeout_s=timeout_s)


def stop_database(
    chaos: ChaosStack, *, in_flight: int, outage_s: float, timeout_s: float
) -> Outcome:
    ids = [chaos.submit(seed=200 + i, samples=64) for i in range(in_flight)]
    time.sleep(1.0)
    chaos.postgres.stop()
    time.sleep(outage_s)
    chaos.postgres.start()
    since = time.monotonic()
    # Submitted the moment the database is back, before any agent could beat again: the
    # outage's silence must not count against them (shared/db/liveness.py).
    ids.append(chaos.submit_when_up(seed=299, samples=64))
    return chaos.settle(f"Postgres down {outage_s:g} s", ids, since=since, timeout_s=timeout_s)


def restart_broker_behind_busy_agent(
    chaos: ChaosStack, *, queued: int, busy_s: float, timeout_s: float
) -> Outcome:
    """Redis restarts empty while the only agent measures a long run and ``queued`` runs
    wait behind it: their messages are gone, and the agent is busy, so an idle-agent rule
    cannot tell them lost. Recovery counts from the busy run's end."""
    busy = chaos.submit(
        settings={"minDurationS": busy_s, "targetQps": 100},
        seed=300,
        backendOptions={"service_time_ms": 5},
    )
    chaos.wait_state(busy, lambda r: r["state"] == "RUNNING", 60)
    waiting = [chaos.submit(seed=301 + i, samples=32) for i in range(queued)]
    for evaluation_id in waiting:  # preprocessed, their RunInference queued behind `busy`
        chaos.wait_state(evaluation_id, lambda r: r["state"] == "RUNNING", 60)
    chaos.redis.restart()
    chaos.wait_state(busy, lambda r: r["state"] in FINAL, busy_s + 60)
    since = time.monotonic()
    return chaos.settle(
        "Redis restart behind a busy agent", [busy, *waiting], since=since, timeout_s=timeout_s
    )


def stop_object_store(
    chaos: ChaosStack, *, in_flight: int, outage_s: float, timeout_s: float, hung: bool = False
) -> Outcome:
    """S3 refuses connections (or, ``hung``, accepts and never answers) for ``outage_s``
    while evaluations are in flight, then comes back with its objects."""
    ids = [chaos.submit(seed=400 + i, samples=64) for i in range(in_flight)]
    time.sleep(0.5)
    if hung:
        chaos.s3.hang()
    else:
        chaos.s3.down()
    time.sleep(outage_s / 2)
    # Sent while S3 is away: accepted, and waiting rather than failing.
    ids += [chaos.submit(seed=420 + i, samples=64) for i in range(2)]
    time.sleep(outage_s / 2)
    chaos.s3.up()
    since = time.monotonic()
    what = "hung" if hung else "down"
    return chaos.settle(f"S3 {what} {outage_s:g} s", ids, since=since, timeout_s=timeout_s)


def empty_object_store(chaos: ChaosStack, *, in_flight: int, timeout_s: float) -> Outcome:
    """S3 comes back empty, its bucket gone (a fresh server); then evaluations are sent."""
    chaos.settle("warm-up", [chaos.submit(seed=450, samples=16)], since=0, timeout_s=timeout_s)
    chaos.empty_object_store()
    since = time.monotonic()
    ids = [chaos.submit(seed=460 + i, samples=64) for i in range(in_flight)]
    return chaos.settle("S3 back empty", ids, since=since, timeout_s=timeout_s)
