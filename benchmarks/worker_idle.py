"""Does the inference worker wait? Queue evaluations on the stack; print its idle share.

Starts its own stack (moto S3 in its own process, a fresh Postgres database, its own Redis
database, the API and every worker, torch on CPU), submits ``--evaluations`` evaluations
through GraphQL at once, each with its own synthetic dataset (so each needs its own
preprocessing: no shard is reused), and waits for all of them. From each run's stored
``timings`` (Measurement.timings: the wall window of the model load and of the LoadGen
run) it prints, between the first run's start and the last run's end:

- measuring: the LoadGen runs' share of that span;
- model loads: the loads' share (the cold starts, counted apart as the issue asks), and
  how many runs loaded their model (the worker keeps it loaded for the next run);
- idle: the rest, when the worker had no run to measure (target < 5 %).

    python benchmarks/worker_idle.py --evaluations 10 --samples 64 --min-duration 1

Needs Postgres and Redis running (BENCHSTACK_TEST_POSTGRES / BENCHSTACK_TEST_REDIS
override where). Run it alone on the machine: the share depends on how fast the
preprocess worker keeps ahead, which other load changes.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
from sqlalchemy import select

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# api_load sits beside this file, on sys.path when run as a script (mypy sees it so too).
from api_load import FINAL, SUBMIT, User, gql, make_users  # noqa: E402

from services.core.stored_report import load_loadgen_report  # noqa: E402
from services.stack.manager import default_services  # noqa: E402
from shared.db.evaluations import Evaluation  # noqa: E402
from shared.db.models import Run  # noqa: E402
from shared.db.session import session_scope  # noqa: E402
from shared.settings import Settings  # noqa: E402
from tests.support.ephemeral import EphemeralStack  # noqa: E402

MAX_EVALUATIONS = 100


def submission(samples: int, min_duration_s: float, model: str) -> dict[str, Any]:
    return {
        "model": model,
        "framework": "torch",
        "scenario": "offline",
        "settings": {"minDurationS": min_duration_s},
        "samples": samples,
    }


async def submit_all(url: str, user: User, inputs: list[dict[str, Any]]) -> list[str]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
        answers = await asyncio.gather(
            *(gql(session, url, user, SUBMIT, {"input": given}) for given in inputs)
        )
    ids = []
    for status, body in answers:
        result = (body.get("data") or {}).get("submitEvaluation") if status == 200 else None
        if not result or "id" not in result:
            raise RuntimeError(f"submission refused: {status} {body}")
        ids.append(result["id"])
    return ids


def wait_final(database_url: str, ids: list[str], timeout_s: float) -> dict[str, str]:
    deadline = time.monotonic() + timeout_s
    while True:
        with session_scope(database_url) as session:
            states = dict(
                session.execute(
                    select(Evaluation.id, Evaluation.state).where(Evaluation.id.in_(ids))
                ).all()
            )
        if all(states.get(i) in FINAL for i in ids) or time.monotonic() > deadline:
            return {i: states.get(i, "MISSING") for i in ids}
        time.sleep(1.0)


def run_timings(database_url: str, ids: list[str]) -> list[dict[str, float]]:
    with session_scope(database_url) as session:
        reports = session.scalars(select(Run.report).where(Run.evaluation_id.in_(ids))).all()
    return [load_loadgen_report(report).timings for report in reports]


def idle_report(timings: list[dict[str, float]]) -> dict[str, float]:
    """Shares of the span from the first run's start to the last run's end."""
    starts = [t.get("model_load_started_at", t["loadgen_started_at"]) for t in timings]
    span = max(t["loadgen_ended_at"] for t in timings) - min(starts)
    measuring = sum(t["loadgen_s"] for t in timings)
    loads = sum(t.get("model_load_s", 0.0) for t in timings)
    ordered = sorted(timings, key=lambda t: t["loadgen_started_at"])
    gaps = sorted(
        b.get("model_load_started_at", b["loadgen_started_at"]) - a["loadgen_ended_at"]
        for a, b in itertools.pairwise(ordered)
    )
    return {
        "span_s": span,
        "measuring": measuring / span,
        "model_loads": loads / span,
        "loads": float(sum("model_load_s" in t for t in timings)),
        "idle": max(0.0, span - measuring - loads) / span,
        "median_gap_s": gaps[len(gaps) // 2],
        "max_gap_s": gaps[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--evaluations", type=int, default=10)
    parser.add_argument("--samples", type=int, default=64, help="synthetic images, first one")
    parser.add_argument("--min-duration", type=float, default=1.0, help="LoadGen seconds")
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args()
    if not 2 <= args.evaluations <= MAX_EVALUATIONS:
        raise SystemExit(f"--evaluations: {args.evaluations}; accepted: 2..{MAX_EVALUATIONS}")
    stack = EphemeralStack(
        heartbeat_s=Settings.model_fields["agent_heartbeat_seconds"].default,
        s3_in_own_process=True,
        # Shards of the size users get, not the tests' 8 samples: with 1024 samples those
        # were 128 shards, whose metadata and tensors every run fetched one object at a time.
        extra_env={"BENCHSTACK_SHARD_SAMPLES": str(Settings.model_fields["shard_samples"].default)},
    )
    stack.start_servers()
    try:
        stack.start_services(default_services(port=stack.api_port, frameworks=["torch"]))
        stack.wait_for_agents(1, timeout_s=120)
        (user,) = make_users(stack.database_url, 1, "idle")
        # A different sample count each: a dataset (and shard) of its own to preprocess.
        inputs = [
            submission(args.samples + i, args.min_duration, args.model)
            for i in range(args.evaluations)
        ]
        ids = asyncio.run(submit_all(stack.api_url, user, inputs))
        states = wait_final(stack.database_url, ids, args.timeout)
        done = [i for i, state in states.items() if state == "SUCCEEDED"]
        print(f"{len(done)} of {len(ids)} evaluations SUCCEEDED: {sorted(set(states.values()))}")
        timings = [t for t in run_timings(stack.database_url, done) if "loadgen_s" in t]
        if len(timings) < 2:
            raise SystemExit("fewer than two runs with timings: no idle share to give")
        shares = idle_report(timings)
        print(
            f"inference worker over {shares['span_s']:.1f} s, {len(timings)} runs of "
            f"{args.model} ({args.min_duration:g} s LoadGen each, {args.samples}+ images):"
        )
        print(f"  measuring    {shares['measuring']:6.1%}")
        print(
            f"  model loads  {shares['model_loads']:6.1%}  (cold starts, counted apart: "
            f"{shares['loads']:.0f} loads for {len(timings)} runs, the rest kept loaded)"
        )
        verdict = "met" if shares["idle"] < 0.05 else "NOT met"
        print(f"  idle         {shares['idle']:6.1%}  (target < 5 %: {verdict})")
        print(
            f"  between one run's end and the next one's start (its load or LoadGen): median "
            f"{shares['median_gap_s']:.2f} s, max {shares['max_gap_s']:.2f} s"
        )
    finally:
        stack.close()


if __name__ == "__main__":
    main()
