"""Hostile load beside benchmarks/api_load.py's clients: what one abusive caller does to
everyone else's latency. Each attack runs ``attackers`` loops as one user of its own:

- ``query``: the 20-alias query (every evaluation's report, environment and 20,000
  latencies, twenty times over) that once held the API for 15-33 s;
- ``budget``: the most costly query the cost limit lets through, in a loop (the per-caller
  budget of query cost is what bounds it);
- ``fragments``: 1.2 KB of fragments each spreading the next twice, 30 levels down
  (``fragment_fan_out``): 2^31 selections once inlined, which Strawberry's depth and alias
  rules walked for minutes (issue 53);
- ``wrapped``: the 20-alias query inside 17 nested fragments (``fragment_wrapped``), which
  a cost walk that stopped at 16 levels of fragments estimated at 0 (issue 53);
- ``side-by-side``: 150 fragments, each asking for one field, spread side by side
  (``fragments_side_by_side``): cheap to run, 0.2-0.3 s to validate (graphql-core compares
  every two of them);
- ``subscriptions``: 300 evaluationUpdates subscriptions on one token, held open;
- ``readyz``: unauthenticated /readyz in a loop.

The outcome is counted per answer (HTTP status, or the GraphQL error code).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

ATTACKS = (
    "query",
    "budget",
    "fragments",
    "wrapped",
    "side-by-side",
    "subscriptions",
    "readyz",
)
SUBSCRIPTIONS = 300
CLOSE_GRACE_S = 15.0

COSTLY = (
    "{"
    + " ".join(
        f"a{i}: evaluations(first: 100) {{ items {{ runs {{ report environment "
        f"latencySample(limit: 20000) {{ latenciesMs }} }} }} }}"
        for i in range(20)
    )
    + "}"
)
# Just under the default cost limit (10^6): pages of reports and latencies.
MOST_ALLOWED = (
    "{ evaluations(first: 50) { items { runs { report environment "
    "latencySample(limit: 2000) { latenciesMs } } } } }"
)


def fragment_fan_out(levels: int = 30) -> str:
    """``query{...F0}``, each ``F<i>`` spreading ``F<i+1>`` twice, the last one a field."""
    parts = ["query{...F0}"]
    parts += [f"fragment F{i} on Query{{...F{i + 1} ...F{i + 1}}}" for i in range(levels)]
    parts.append(f"fragment F{levels} on Query{{evaluations{{totalCount}}}}")
    return " ".join(parts)


def fragment_wrapped(levels: int = 17, query: str = COSTLY) -> str:
    """``query`` (an anonymous ``{...}`` on Query) inside ``levels`` nested fragments."""
    parts = ["query{...W0}"]
    parts += [f"fragment W{i} on Query{{...W{i + 1}}}" for i in range(levels)]
    parts.append(f"fragment W{levels} on Query{query}")
    return " ".join(parts)


def fragments_side_by_side(count: int = 150) -> str:
    """``count`` fragments of one field each, all spread in the query's selection set."""
    spreads = " ".join(f"...G{i}" for i in range(count))
    definitions = " ".join(
        f"fragment G{i} on Query{{evaluations{{totalCount}}}}" for i in range(count)
    )
    return f"query{{{spreads}}} {definitions}"


ENDED = (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR)
UPDATES = "subscription($id: String!) { evaluationUpdates(id: $id) { id state } }"


@dataclass
class AttackTally:
    answers: dict[str, int] = field(default_factory=dict)

    def count(self, answer: str) -> None:
        self.answers[answer] = self.answers.get(answer, 0) + 1

    def describe(self) -> str:
        total = sum(self.answers.values())
        parts = ", ".join(f"{k}: {v}" for k, v in sorted(self.answers.items()))
        return f"{total} ({parts})"


def _answer(status: int, body: Any) -> str:
    if status != 200:
        return f"HTTP {status}"
    errors = body.get("errors") if isinstance(body, dict) else None
    if errors:
        return str(errors[0].get("extensions", {}).get("code", "error"))
    return "served"


async def _post_loop(
    session: aiohttp.ClientSession,
    url: str,
    token: str,
    query: str,
    until: float,
    tally: AttackTally,
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    while time.monotonic() < until:
        try:
            async with session.post(
                url + "/graphql", json={"query": query}, headers=headers
            ) as response:
                text = await response.text()
                body = json.loads(text) if response.status == 200 else None
                tally.count(_answer(response.status, body))
        except (TimeoutError, aiohttp.ClientError, json.JSONDecodeError) as exc:
            tally.count(type(exc).__name__)


async def _readyz_loop(
    session: aiohttp.ClientSession, url: str, until: float, tally: AttackTally
) -> None:
    while time.monotonic() < until:
        try:
            async with session.get(url + "/readyz") as response:
                await response.read()
                tally.count(f"HTTP {response.status}")
        except (TimeoutError, aiohttp.ClientError) as exc:
            tally.count(type(exc).__name__)


async def _hold_subscription(
    session: aiohttp.ClientSession,
    url: str,
    token: str,
    evaluation_id: str,
    until: float,
    tally: AttackTally,
) -> None:
    ws_url = url.replace("http://", "ws://") + "/graphql"
    try:
        async with session.ws_connect(ws_url, protocols=["graphql-transport-ws"]) as ws:
            await ws.send_json(
                {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}
            )
            await ws.receive_json(timeout=30)
            await ws.send_json(
                {
                    "id": "1",
                    "type": "subscribe",
                    "payload": {"query": UPDATES, "variables": {"id": evaluation_id}},
                }
            )
            first = await ws.receive_json(timeout=30)
            payload = first.get("payload")
            refused = first["type"] == "error" or (
                isinstance(payload, dict) and payload.get("errors")
            )
            tally.count("refused" if refused else "held")
            with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
                while time.monotonic() < until:
                    message = await ws.receive(timeout=max(0.1, until - time.monotonic()))
                    if message.type in ENDED:
                        # Closed by the server: receive() would answer at once from now on.
                        tally.count("closed by the server")
                        return
    except (TimeoutError, aiohttp.ClientError, TypeError, ValueError) as exc:
        # TypeError/ValueError: receive_json met a close frame or a non-JSON message.
        tally.count(type(exc).__name__)


async def _bounded(job: Any, *, until: float, tally: AttackTally) -> None:
    """``job``, given up ``CLOSE_GRACE_S`` after ``until``: a connection the server never
    lets go of must not hold the benchmark."""
    try:
        await asyncio.wait_for(job, timeout=max(1.0, until - time.monotonic()) + CLOSE_GRACE_S)
    except TimeoutError:
        tally.count("not closed in time")


async def attack(
    session: aiohttp.ClientSession,
    url: str,
    kind: str,
    *,
    loops: int,
    token: str,
    evaluation_id: str,
    until: float,
    tally: AttackTally,
) -> None:
    """Run ``kind`` against ``url`` until ``until`` (time.monotonic)."""
    if kind == "subscriptions":
        jobs = [
            _bounded(
                _hold_subscription(session, url, token, evaluation_id, until, tally),
                until=until,
                tally=tally,
            )
            for _ in range(SUBSCRIPTIONS)
        ]
    elif kind == "readyz":
        jobs = [_readyz_loop(session, url, until, tally) for _ in range(loops)]
    else:
        query = {
            "query": COSTLY,
            "fragments": fragment_fan_out(),
            "wrapped": fragment_wrapped(),
            "side-by-side": fragments_side_by_side(),
        }.get(kind, MOST_ALLOWED)
        jobs = [_post_loop(session, url, token, query, until, tally) for _ in range(loops)]
    await asyncio.gather(*jobs)
