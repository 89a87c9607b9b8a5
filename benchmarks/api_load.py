"""The GraphQL API under load: many clients at once, mixed queries and small submissions.

Starts its own stack (moto S3, a fresh Postgres database, a flushed Redis database index,
real workers with the null backend) or talks to a running API (``--url`` plus
``--database-url``, where the benchmark creates its users' tokens). Each of ``--clients``
clients is its own user with its own token; for ``--duration`` seconds each sends one
request after another, drawn from this mix:

- ``list``: the user's evaluations, first page;
- ``one``: one of the user's evaluations with its runs and their metrics;
- ``agents``: the live agents;
- ``compare``: the user's fan-out (one is submitted per user before the clock starts);
- ``submit``: a small evaluation (null backend, 8 synthetic samples, a 0.1 s Offline run),
  at most ``--submit-rate`` a second over all clients (the workers, not the API, bound how
  fast evaluations finish); a client over that budget reads instead.

It prints requests/s, p50/p99 latency per kind and overall, and errors (HTTP status other
than 200, GraphQL errors, rejected submissions). After the load it waits for every
accepted submission to reach a final state and prints the lost ones: ids the API accepted
but never lists, and ids still not final once none has finished for ``--grace`` seconds
(the workers work off the backlog at their own pace; only work that stops moving is lost).

``--baseline REF`` (a git commit) and/or ``--baseline-env KEY=VALUE`` compare two APIs side
by side in one run: the baseline API runs the code of REF (exported with ``git archive``)
or the working tree with the extra environment; the candidate runs the working tree. Both
serve the same database and workers; the load alternates between them in ``--rounds``
rounds each, so a machine that gets busier affects both alike, and the ratio
candidate/baseline is printed. Each API first gets ``--warmup`` seconds of load that are not
counted. Example::

    python benchmarks/api_load.py --clients 50 --duration 60
    python benchmarks/api_load.py --baseline 3b97a69 --duration 60 --rounds 3
    python benchmarks/api_load.py --baseline-env BENCHSTACK_API_WORKERS=1
    python benchmarks/api_load.py --attack query      # others' latency beside an attacker

Needs Postgres and Redis running (BENCHSTACK_TEST_POSTGRES / BENCHSTACK_TEST_REDIS /
BENCHSTACK_TEST_REDIS_DB override where).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import math
import os
import random
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from api_attacks import ATTACKS, AttackTally, attack  # noqa: E402

from services.api.auth import create_token  # noqa: E402
from services.stack.manager import default_services, wait_for_http  # noqa: E402
from shared.db.session import session_scope  # noqa: E402
from shared.settings import Settings  # noqa: E402
from tests.support.ephemeral import EphemeralStack, free_port  # noqa: E402

FINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}

LIST = """query { evaluations(first: 20) { totalCount nextCursor
  items { id state reason modelName framework createdAt finishedAt } } }"""
ONE = """query($id: String!) { evaluation(id: $id) { id state reason done
  runs { id validity samplesPerSecond metrics { name value unit } } } }"""
AGENTS = """query { agents { id queue framework device live lastHeartbeat } }"""
COMPARE = """query($id: String!) { compare(groupId: $id) { id model done
  rows { evaluationId state agentId samplesPerSecond latencyP99Ms validity } } }"""
SUBMIT = """mutation($input: SubmitEvaluationInput!) { submitEvaluation(input: $input) {
  __typename ... on Evaluation { id } ... on Comparison { id rows { evaluationId } }
  ... on UserError { message } } }"""
PAGE = """query($after: String) { evaluations(first: 200, after: $after) {
  nextCursor items { id state reason } } }"""

SMALL_SUBMISSION: dict[str, Any] = {
    "model": "resnet18",
    "framework": "null",
    "scenario": "offline",
    "settings": {"minDurationS": 0.1, "targetQps": 1000},
    "samples": 8,
}
# Request kinds and their default shares of the mix.
DEFAULT_MIX = {"list": 35, "one": 30, "agents": 15, "compare": 15, "submit": 5}


@dataclass
class User:
    name: str
    token: str
    group_id: str = ""
    evaluation_ids: list[str] = field(default_factory=list)


@dataclass
class Tally:
    """Latencies (seconds) of successful requests and error counts, per request kind."""

    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    error_samples: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def ok(self, kind: str, latency: float) -> None:
        self.latencies.setdefault(kind, []).append(latency)

    def error(self, kind: str, what: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1
        if len(self.error_samples) < 5:
            self.error_samples.append(f"{kind}: {what[:300]}")

    def count(self, kind: str | None = None) -> int:
        if kind is None:
            return sum(len(v) for v in self.latencies.values()) + sum(self.errors.values())
        return len(self.latencies.get(kind, [])) + self.errors.get(kind, 0)

    def all_latencies(self) -> list[float]:
        return [x for v in self.latencies.values() for x in v]

    def merge(self, other: Tally) -> None:
        for kind, values in other.latencies.items():
            self.latencies.setdefault(kind, []).extend(values)
        for kind, n in other.errors.items():
            self.errors[kind] = self.errors.get(kind, 0) + n
        self.error_samples += other.error_samples[: max(0, 5 - len(self.error_samples))]
        self.seconds += other.seconds

    @property
    def requests_per_s(self) -> float:
        return self.count() / self.seconds if self.seconds else 0.0


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = math.ceil(q / 100 * len(ordered))
    return ordered[min(len(ordered), max(1, rank)) - 1]


async def gql(
    session: aiohttp.ClientSession, url: str, user: User, query: str, variables: dict[str, Any]
) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {user.token}"}
    payload = {"query": query, "variables": variables}
    async with session.post(url + "/graphql", json=payload, headers=headers) as response:
        text = await response.text()
        if response.status != 200:
            return response.status, text
        return 200, await response.json(content_type=None)


def _problem(kind: str, status: int, body: Any) -> str | None:
    """Why a response counts as an error, or None when it is a success."""
    if status != 200:
        return f"HTTP {status}: {body}"
    if body.get("errors"):
        return str(body["errors"])
    if kind == "submit":
        result = body["data"]["submitEvaluation"]
        if result["__typename"] not in ("Evaluation", "Comparison"):
            return f"rejected: {result}"
    return None


def request_for(kind: str, user: User, rng: random.Random) -> tuple[str, dict[str, Any]]:
    if kind == "one":
        return ONE, {"id": rng.choice(user.evaluation_ids)}
    if kind == "compare":
        return COMPARE, {"id": user.group_id}
    if kind == "agents":
        return AGENTS, {}
    if kind == "submit":
        return SUBMIT, {"input": SMALL_SUBMISSION}
    return LIST, {}


@dataclass
class SubmitBudget:
    """At most ``per_s`` submissions a second over the whole load, so the workers (not
    the API under test) can finish them and "lost" means lost, not still queued."""

    per_s: float
    start: float = field(default_factory=time.monotonic)
    granted: int = 0

    def take(self) -> bool:
        if self.granted + 1 > self.per_s * (time.monotonic() - self.start) + 1:
            return False
        self.granted += 1
        return True


async def client_loop(
    session: aiohttp.ClientSession,
    url: str,
    user: User,
    mix: dict[str, int],
    until: float,
    tally: Tally,
    submitted: list[tuple[User, str]],
    budget: SubmitBudget,
    seed: int,
) -> None:
    rng = random.Random(seed)
    kinds, weights = list(mix), list(mix.values())
    reads = [k for k in kinds if k != "submit"]
    read_weights = [mix[k] for k in reads]
    while time.monotonic() < until:
        kind = rng.choices(kinds, weights)[0]
        if kind == "submit" and not budget.take():
            # Over the submission budget: a read instead, drawn with the reads' weights.
            kind = rng.choices(reads, read_weights)[0]
        query, variables = request_for(kind, user, rng)
        start = time.perf_counter()
        try:
            status, body = await gql(session, url, user, query, variables)
        except (TimeoutError, aiohttp.ClientError) as exc:
            tally.error(kind, f"{type(exc).__name__}: {exc}")
            continue
        latency = time.perf_counter() - start
        problem = _problem(kind, status, body)
        if problem is not None:
            tally.error(kind, problem)
            continue
        tally.ok(kind, latency)
        if kind == "submit":
            new_id = body["data"]["submitEvaluation"]["id"]
            user.evaluation_ids.append(new_id)
            submitted.append((user, new_id))


async def run_load(
    url: str,
    users: list[User],
    mix: dict[str, int],
    seconds: float,
    seed: int,
    submit_per_s: float,
    attacker: Attacker | None = None,
) -> tuple[Tally, list[tuple[User, str]]]:
    tally = Tally()
    budget = SubmitBudget(submit_per_s)
    submitted: list[tuple[User, str]] = []
    connector = aiohttp.TCPConnector(limit=len(users) + 10)
    timeout = aiohttp.ClientTimeout(total=60)
    async with (
        aiohttp.ClientSession(connector=connector, timeout=timeout) as session,
        # The attacker's own connections: it must not take the clients' pool.
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as hostile,
    ):
        start = time.monotonic()
        until = start + seconds
        jobs = [
            client_loop(session, url, u, mix, until, tally, submitted, budget, seed + i)
            for i, u in enumerate(users)
        ]
        if attacker is not None:
            jobs.append(
                attack(
                    hostile,
                    url,
                    attacker.kind,
                    loops=attacker.loops,
                    token=attacker.user.token,
                    evaluation_id=attacker.user.evaluation_ids[0],
                    until=until,
                    tally=attacker.tally,
                )
            )
        await asyncio.gather(*jobs)
        tally.seconds = time.monotonic() - start
    return tally, submitted


@dataclass
class Attacker:
    """One hostile user beside the clients (benchmarks/api_attacks.py)."""

    kind: str
    loops: int
    user: User
    tally: AttackTally = field(default_factory=AttackTally)


async def seed_users(url: str, users: list[User]) -> None:
    """Before the clock starts: each user submits one fan-out, so `one` and `compare`
    have something of their own to read."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:

        async def one(user: User) -> None:
            status, body = await gql(
                session, url, user, SUBMIT, {"input": {**SMALL_SUBMISSION, "fanOut": True}}
            )
            problem = _problem("submit", status, body)
            if problem is not None:
                raise RuntimeError(f"seeding {user.name}: {problem}")
            result = body["data"]["submitEvaluation"]
            user.group_id = result["id"]
            user.evaluation_ids = [r["evaluationId"] for r in result["rows"]]

        await asyncio.gather(*(one(u) for u in users))


async def states_of(url: str, user: User) -> dict[str, tuple[str, str]]:
    """Every evaluation the API lists for the user, id -> (state, reason)."""
    found: dict[str, tuple[str, str]] = {}
    after: str | None = None
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        while True:
            status, body = await gql(session, url, user, PAGE, {"after": after})
            if status != 200 or body.get("errors"):
                raise RuntimeError(f"listing {user.name}'s evaluations: {status} {body}")
            page = body["data"]["evaluations"]
            found.update({e["id"]: (e["state"], e["reason"] or "") for e in page["items"]})
            after = page["nextCursor"]
            if after is None:
                return found


def await_outcomes(
    url: str, submitted: list[tuple[User, str]], grace_s: float
) -> tuple[list[str], list[str], dict[str, int], dict[str, int]]:
    """(ids never listed, ids not final, count per final state, count per failure
    reason), once every id is final or none has become final for ``grace_s`` seconds.
    The workers finish a backlog at their own pace; only evaluations that stop moving
    count as lost."""
    by_user: dict[str, tuple[User, set[str]]] = {}
    for user, evaluation_id in submitted:
        by_user.setdefault(user.name, (user, set()))[1].add(evaluation_id)
    wanted = {i for _, ids in by_user.values() for i in ids}
    finished_before = -1
    deadline = time.monotonic() + grace_s
    while True:
        listed: dict[str, tuple[str, str]] = {}
        for user, _ in by_user.values():
            listed.update(asyncio.run(states_of(url, user)))
        states = {i: state for i, (state, _) in listed.items()}
        failures: dict[str, int] = {}
        for i in wanted & set(listed):
            state, reason = listed[i]
            if state == "FAILED":
                failures[reason] = failures.get(reason, 0) + 1
        missing = sorted(wanted - set(states))
        pending = sorted(i for i in wanted & set(states) if states[i] not in FINAL)
        finals: dict[str, int] = {}
        for i in wanted & set(states):
            if states[i] in FINAL:
                finals[states[i]] = finals.get(states[i], 0) + 1
        finished = sum(finals.values())
        if finished > finished_before:
            finished_before = finished
            deadline = time.monotonic() + grace_s
        if (not pending and not missing) or time.monotonic() > deadline:
            return missing, pending, finals, failures
        time.sleep(1.0)


@dataclass
class ApiVariant:
    """One API process: the code of a git ref (or the working tree) plus extra environment."""

    label: str
    ref: str | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    source: Path = REPO
    log: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def describe(self) -> str:
        code = f"code of {self.ref}" if self.ref else "working tree"
        env = " ".join(f"{k}={v}" for k, v in self.extra_env.items())
        return f"{self.label}: {code}{' ' + env if env else ''}"

    def start(self, env: dict[str, str], workdir: Path) -> None:
        if self.ref is not None:
            self.source = export_ref(self.ref, workdir / f"src-{self.label}")
        self.log = workdir / f"api-{self.label}.log"
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "services.stack.entry", "api", "--port", str(self.port)],
                cwd=self.source,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env={**os.environ, **env, **self.extra_env, "PYTHONPATH": str(self.source)},
            )
        if not wait_for_http(self.url + "/healthz", timeout_s=90):
            raise RuntimeError(f"API {self.label} did not start: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        # Its own session: uvicorn's worker processes go with it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def export_ref(ref: str, into: Path) -> Path:
    """The tracked files of ``ref`` under ``into`` (git archive: the repository is untouched)."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", ref],
        check=True,
        capture_output=True,
    ).stdout
    into.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def parse_mix(text: str) -> dict[str, int]:
    mix: dict[str, int] = {}
    for part in text.split(","):
        kind, _, weight = part.partition("=")
        if kind not in DEFAULT_MIX or not weight.isdigit():
            raise SystemExit(
                f"--mix: {part!r}; accepted: KIND=WEIGHT,... with KIND in {', '.join(DEFAULT_MIX)}"
            )
        mix[kind] = int(weight)
    return {k: w for k, w in mix.items() if w > 0}


def parse_env(items: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--baseline-env: {item!r}; accepted: KEY=VALUE")
        env[key] = value
    return env


def make_users(database_url: str, count: int, prefix: str) -> list[User]:
    users = []
    with session_scope(database_url) as session:
        for i in range(count):
            name = f"{prefix}-{i}"
            users.append(User(name, create_token(session, user_name=name, label="api_load")))
    return users


def report(label: str, tally: Tally) -> None:
    print(f"\n== {label}: {tally.count()} requests in {tally.seconds:.1f} s")
    print(f"{'kind':<9}{'requests':>9}{'errors':>8}{'p50 ms':>9}{'p99 ms':>9}")
    for kind in [*sorted(tally.latencies.keys() | tally.errors.keys()), None]:
        values = tally.all_latencies() if kind is None else tally.latencies.get(kind, [])
        errors = sum(tally.errors.values()) if kind is None else tally.errors.get(kind, 0)
        print(
            f"{kind or 'all':<9}{tally.count(kind):>9}{errors:>8}"
            f"{percentile(values, 50) * 1000:>9.0f}{percentile(values, 99) * 1000:>9.0f}"
        )
    print(f"requests/s: {tally.requests_per_s:.1f}")
    for sample in tally.error_samples:
        print(f"  error {sample}")


def run_rounds(
    variants: list[ApiVariant],
    users: list[User],
    args: argparse.Namespace,
    attacker: Attacker | None = None,
) -> tuple[dict[str, Tally], list[tuple[User, str]]]:
    """Alternate the load between variants; each gets ``rounds`` slices of the duration."""
    tallies = {v.label: Tally() for v in variants}
    submitted: list[tuple[User, str]] = []
    mix = parse_mix(args.mix)
    slice_s = args.duration / args.rounds
    for variant in variants:
        if args.warmup > 0:
            # Unrecorded: a new process's first seconds (connection pools, parse caches,
            # Postgres plans) would otherwise count against whichever variant goes first.
            _, new = asyncio.run(
                run_load(variant.url, users, mix, args.warmup, args.seed - 1, args.submit_rate)
            )
            submitted += new
            print(f"warm-up {variant.label}: {args.warmup:g} s (not counted)", flush=True)
    for round_index in range(args.rounds):
        # Alternate who goes first, so neither always follows the other's backlog.
        order = variants if round_index % 2 == 0 else list(reversed(variants))
        for variant in order:
            tally, new = asyncio.run(
                run_load(
                    variant.url,
                    users,
                    mix,
                    slice_s,
                    args.seed + 1000 * round_index,
                    args.submit_rate,
                    attacker,
                )
            )
            print(
                f"round {round_index + 1} {variant.label}: {tally.requests_per_s:.1f} requests/s, "
                f"p99 {percentile(tally.all_latencies(), 99) * 1000:.0f} ms, "
                f"{sum(tally.errors.values())} errors",
                flush=True,
            )
            tallies[variant.label].merge(tally)
            submitted += new
    return tallies, submitted


@contextlib.contextmanager
def own_stack(args: argparse.Namespace) -> Iterator[tuple[str, dict[str, str]]]:
    """A throw-away stack without an API: (database URL, the environment an API needs)."""
    # The production heartbeat: the tests' 1 s one declares agents busy with a 2-core
    # machine's load dead within 3 s, which is a test's shortcut, not what a user runs.
    # The S3 server in a process of its own, as MinIO is: on this process's threads it
    # would take turns on the GIL with the clients timing their requests.
    stack = EphemeralStack(
        heartbeat_s=Settings.model_fields["agent_heartbeat_seconds"].default,
        s3_in_own_process=True,
    )
    stack.start_servers()
    try:
        workers = [
            s
            for s in default_services(
                frameworks=["null"], preprocess_concurrency=args.preprocess_concurrency
            )
            if s.name != "api"
        ]
        stack.start_services(workers)
        stack.wait_for_agents(1)
        yield stack.database_url, stack.env()
    finally:
        stack.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load per API")
    parser.add_argument("--rounds", type=int, default=1, help="slices per API when comparing")
    parser.add_argument(
        "--warmup", type=float, default=5.0, help="seconds of unrecorded load per API first"
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=120.0,
        help="after the load, unfinished submissions count as lost once none has "
        "finished for this many seconds",
    )
    parser.add_argument(
        "--mix",
        default=",".join(f"{k}={w}" for k, w in DEFAULT_MIX.items()),
        help="request kinds and weights (default: %(default)s)",
    )
    parser.add_argument(
        "--submit-rate",
        type=float,
        default=0.25,
        help="most submissions per second over all clients; over it a client reads instead",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--url", help="a running API instead of a throw-away stack")
    parser.add_argument("--database-url", help="with --url: where to create the users' tokens")
    parser.add_argument("--baseline", metavar="REF", help="git ref whose API is the baseline")
    parser.add_argument(
        "--baseline-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment of the baseline API (repeatable)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment of the candidate API (repeatable)",
    )
    parser.add_argument("--preprocess-concurrency", type=int, default=1)
    parser.add_argument(
        "--attack",
        choices=ATTACKS,
        help="one hostile user beside the clients (benchmarks/api_attacks.py); the clients' "
        "latencies are what it costs everyone else",
    )
    parser.add_argument("--attackers", type=int, default=2, help="the attack's loops")
    args = parser.parse_args()
    if args.rounds < 1 or args.clients < 1 or args.duration <= 0 or args.warmup < 0:
        raise SystemExit(
            "--rounds and --clients must be at least 1, --duration above 0, --warmup at least 0"
        )

    # A SIGTERM (e.g. from `timeout`) must still run the cleanup below, or services linger.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.url:
        if not args.database_url or args.baseline or args.baseline_env:
            raise SystemExit("--url needs --database-url and takes no --baseline/--baseline-env")
        users = make_users(args.database_url, args.clients, f"load-{os.getpid()}")
        url = args.url.rstrip("/")
        asyncio.run(seed_users(url, users))
        seeded = seeded_ids(users)
        tally, submitted = asyncio.run(
            run_load(url, users, parse_mix(args.mix), args.duration, args.seed, args.submit_rate)
        )
        report(f"{url} ({args.clients} clients)", tally)
        finish(url, seeded + submitted, args.grace)
        return

    variants = [ApiVariant("candidate", extra_env=parse_env(args.env))]
    if args.baseline or args.baseline_env:
        baseline = ApiVariant("baseline", ref=args.baseline, extra_env=parse_env(args.baseline_env))
        variants.insert(0, baseline)
    with own_stack(args) as (database_url, env), tempfile.TemporaryDirectory() as tmp:
        try:
            for variant in variants:
                variant.start(env, Path(tmp))
                print(f"started {variant.describe()} at {variant.url}", flush=True)
            users = make_users(database_url, args.clients, "load")
            attacker = None
            if args.attack:
                (hostile,) = make_users(database_url, 1, "attacker")
                attacker = Attacker(args.attack, args.attackers, hostile)
            asyncio.run(seed_users(variants[-1].url, users + ([attacker.user] if attacker else [])))
            seeded = seeded_ids(users)
            tallies, submitted = run_rounds(variants, users, args, attacker)
            for variant in variants:
                report(f"{variant.describe()} ({args.clients} clients)", tallies[variant.label])
            if attacker is not None:
                print(
                    f"\nattack {attacker.kind!r} ({attacker.loops} loops): answers "
                    f"{attacker.tally.describe()}"
                )
            if len(variants) == 2:
                print_ratio(tallies["baseline"], tallies["candidate"])
            finish(variants[-1].url, seeded + submitted, args.grace)
        finally:
            for variant in variants:
                variant.stop()


def print_ratio(baseline: Tally, candidate: Tally) -> None:
    before, after = baseline.all_latencies(), candidate.all_latencies()
    print("\n== candidate / baseline (same run, alternating rounds)")
    print(f"requests/s: x{candidate.requests_per_s / max(baseline.requests_per_s, 1e-9):.2f}")
    for q in (50, 99):
        ratio = percentile(after, q) / max(percentile(before, q), 1e-9)
        print(f"p{q} latency: x{ratio:.2f}")


def seeded_ids(users: list[User]) -> list[tuple[User, str]]:
    """The fan-out evaluations submitted before the clock started (taken before the load
    appends its own submissions to each user's list)."""
    return [(u, i) for u in users for i in u.evaluation_ids]


def finish(url: str, submitted: list[tuple[User, str]], grace_s: float) -> None:
    missing, pending, finals, failures = await_outcomes(url, submitted, grace_s)
    print(
        f"\nsubmissions: {len(submitted)} accepted (including one fan-out per user), "
        f"final: {finals or '{}'}; lost: {len(missing)} never listed, "
        f"{len(pending)} stuck (none finished for {grace_s:g} s)"
    )
    for reason, count in sorted(failures.items(), key=lambda item: -item[1])[:5]:
        print(f"  {count} failed: {reason[:300]}")
    for evaluation_id in (missing + pending)[:5]:
        print(f"  lost {evaluation_id}")
    if missing or pending:
        sys.exit(1)


if __name__ == "__main__":
    main()
