"""How fast the distributed stack accepts and completes many small evaluations.

Starts its own stack (moto S3, a fresh Postgres database, a flushed Redis database index,
the API and the workers as processes), submits N evaluations at once through GraphQL
(null backend, a tiny synthetic dataset, a short Offline run), waits for all of them and
prints:

- accepted submissions per second (N / time from the first request to the last accept);
- the median (and p90, max) submit-to-done time, from the database's own timestamps.

Needs Postgres and Redis running (BENCHSTACK_TEST_POSTGRES / BENCHSTACK_TEST_REDIS /
BENCHSTACK_TEST_REDIS_DB override where). Run: ``python benchmarks/stack_throughput.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.api.auth import create_token
from services.stack.manager import ENTRY_MODULE, ServiceSpec, default_services
from shared.db.session import session_scope
from tests.support.ephemeral import EphemeralStack

SUBMIT = """mutation($input: SubmitEvaluationInput!) { submitEvaluation(input: $input) {
  __typename ... on Evaluation { id } ... on UserError { message } } }"""
PAGE = """query($after: String) { evaluations(first: 200, after: $after) {
  nextCursor items { id state reason createdAt finishedAt } } }"""


async def submit_all(
    url: str, token: str, count: int, payload: dict[str, Any]
) -> tuple[list[str], float]:
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=count)
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=120, limits=limits
    ) as client:

        async def one() -> str:
            response = await client.post(
                "/graphql", json={"query": SUBMIT, "variables": {"input": payload}}
            )
            result = response.json()["data"]["submitEvaluation"]
            if result["__typename"] != "Evaluation":
                raise RuntimeError(f"rejected: {result}")
            return str(result["id"])

        start = time.perf_counter()
        ids = await asyncio.gather(*(one() for _ in range(count)))
        return list(ids), time.perf_counter() - start


def all_evaluations(url: str, token: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    after = None
    while True:
        response = httpx.post(
            url + "/graphql",
            json={"query": PAGE, "variables": {"after": after}},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        page = response.json()["data"]["evaluations"]
        items += page["items"]
        after = page["nextCursor"]
        if after is None:
            return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--samples", type=int, default=8, help="synthetic images per evaluation")
    parser.add_argument("--min-duration", type=float, default=0.1, help="LoadGen seconds per run")
    parser.add_argument("--inference-workers", type=int, default=1)
    parser.add_argument("--preprocess-concurrency", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()

    # A SIGTERM (e.g. from `timeout`) must still run the cleanup below, or services linger.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    stack = EphemeralStack()
    stack.start_servers()
    try:
        specs = default_services(
            port=stack.api_port,
            frameworks=["null"],
            preprocess_concurrency=args.preprocess_concurrency,
        )
        extra = [
            ServiceSpec(
                f"inference-{i}",
                [sys.executable, "-m", ENTRY_MODULE, "worker", "inference", "--frameworks", "null"],
            )
            for i in range(1, args.inference_workers)
        ]
        stack.start_services(specs + extra)
        with session_scope(stack.database_url) as session:
            token = create_token(session, user_name="bench")
        stack.wait_for_agents(args.inference_workers)
        payload = {
            "model": "resnet18",
            "framework": "null",
            "scenario": "offline",
            "settings": {"minDurationS": args.min_duration, "targetQps": 1000},
            "samples": args.samples,
        }
        ids, submit_s = asyncio.run(submit_all(stack.api_url, token, args.count, payload))
        wanted = set(ids)
        deadline = time.monotonic() + args.timeout
        while True:
            items = [e for e in all_evaluations(stack.api_url, token) if e["id"] in wanted]
            done = [e for e in items if e["state"] in {"SUCCEEDED", "FAILED", "CANCELLED"}]
            if len(done) == len(wanted) or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        failed = [e for e in done if e["state"] != "SUCCEEDED"]
        durations = sorted(
            (
                datetime.fromisoformat(e["finishedAt"]) - datetime.fromisoformat(e["createdAt"])
            ).total_seconds()
            for e in done
        )
        print(
            f"evaluations: {args.count} submitted at once, {len(done)} finished, "
            f"{len(failed)} not SUCCEEDED"
        )
        print(f"accepted submissions/s: {args.count / submit_s:.1f} ({submit_s:.2f} s for all)")
        if durations:
            p90 = durations[min(len(durations) - 1, int(0.9 * len(durations)))]
            print(
                f"submit-to-done: median {statistics.median(durations):.2f} s, "
                f"p90 {p90:.2f} s, max {durations[-1]:.2f} s"
            )
        for e in failed[:5]:
            print(f"  {e['id']}: {e['state']} {e['reason']}")
        if failed or len(done) != len(wanted):
            sys.exit(1)
    finally:
        stack.close()


if __name__ == "__main__":
    main()
