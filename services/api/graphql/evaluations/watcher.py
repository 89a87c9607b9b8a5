"""evaluationUpdates for every subscriber of an API process from one poller.

Each subscription used to poll the database on its own every 0.2 s: 300 subscriptions on
one token took 96 % of everyone else's throughput. Here one task per process reads every
watched evaluation in one query per interval, on one blocking thread, and hands each
subscriber the latest view (a slot, not a queue: a slow client skips views, it never
piles them up). A user may hold ``max_per_user`` subscriptions at once, counted across
every API process (subscription_seats.py: seats in Redis, renewed while open); one more
is refused with the setting's name.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator

from graphql import GraphQLError
from sqlalchemy import select

from services.api.context import ApiDeps, in_thread
from services.api.graphql.evaluations.queries import _one, waiting_reason_of
from services.api.graphql.evaluations.types import EvaluationType
from services.api.subscription_seats import SEAT_TTL_S, SubscriptionSeats
from shared.db.evaluations import Evaluation
from shared.db.states import FINAL_STATE_NAMES

# (owner, evaluation id): a view is only ever read for the owner who subscribed.
Key = tuple[int, str]
TOO_MANY_SUBSCRIPTIONS = "TOO_MANY_SUBSCRIPTIONS"


class _Latest:
    """The newest view for one subscriber; reading waits for one newer than the last."""

    def __init__(self) -> None:
        self._view: EvaluationType | None = None
        self._changed = asyncio.Event()

    def put(self, view: EvaluationType | None) -> None:
        self._view = view
        self._changed.set()

    async def get(self) -> EvaluationType | None:
        await self._changed.wait()
        self._changed.clear()
        return self._view


def _views(deps: ApiDeps, keys: list[Key]) -> dict[Key, EvaluationType | None]:
    """Every watched evaluation in one session; someone else's reads as missing."""
    with deps.read_db() as session:
        rows = session.scalars(select(Evaluation).where(Evaluation.id.in_({i for _, i in keys})))
        found = {row.id: row for row in rows}
        views: dict[Key, EvaluationType | None] = {}
        for owner, evaluation_id in keys:
            row = found.get(evaluation_id)
            views[(owner, evaluation_id)] = (
                EvaluationType.from_row(row, waiting=waiting_reason_of(session, deps.settings, row))
                if row is not None and row.owner_id == owner
                else None
            )
        return views


class EvaluationWatcher:
    """The one poller of an API process (see the module's docstring)."""

    def __init__(self, deps: ApiDeps, *, poll_s: float, max_per_user: int) -> None:
        self._deps = deps
        self._poll_s = poll_s
        self._max_per_user = max_per_user
        self._subscribers: dict[Key, set[_Latest]] = {}
        self._per_user: Counter[int] = Counter()
        self._task: asyncio.Task[None] | None = None
        self._seats = SubscriptionSeats(deps.settings)
        self._held: dict[_Latest, tuple[int, str]] = {}
        self._renewed_at = time.monotonic()

    def watching(self, owner: int) -> int:
        return self._per_user[owner]

    async def updates(self, owner: int, evaluation_id: str) -> AsyncIterator[EvaluationType | None]:
        """The evaluation now, then each time its state, progress or reason changes, until
        it is final; one None (then the end) when it is missing or not the owner's."""
        if self._per_user[owner] >= self._max_per_user:
            raise GraphQLError(
                f"evaluationUpdates: at most {self._max_per_user} subscriptions at once per "
                "user (BENCHSTACK_MAX_SUBSCRIPTIONS_PER_USER); close one first",
                extensions={"code": TOO_MANY_SUBSCRIPTIONS},
            )
        seat = await in_thread(self._seats.take, owner, self._max_per_user)
        if seat is False:
            raise GraphQLError(
                f"evaluationUpdates: at most {self._max_per_user} subscriptions at once per "
                "user across the API's processes (BENCHSTACK_MAX_SUBSCRIPTIONS_PER_USER); "
                "close one first",
                extensions={"code": TOO_MANY_SUBSCRIPTIONS},
            )
        key, slot = (owner, evaluation_id), _Latest()
        if isinstance(seat, str):
            self._held[slot] = (owner, seat)
        self._per_user[owner] += 1
        self._subscribers.setdefault(key, set()).add(slot)
        try:
            # The first view at once, as before: the poller's comes an interval later.
            slot.put(await in_thread(_one, self._deps, owner, evaluation_id))
            self._ensure_polling()
            last: tuple[str, int, str] | None = None
            while True:
                current = await slot.get()
                if current is None:
                    yield None
                    return
                fingerprint = (current.state.value, current.shards_ready, current.reason)
                if fingerprint != last:
                    last = fingerprint
                    yield current
                if current.state.value in FINAL_STATE_NAMES:
                    return
        finally:
            self._per_user[owner] -= 1
            if (held := self._held.pop(slot, None)) is not None:
                # Not awaited: a generator being closed may not wait; a seat not given back
                # expires by itself.
                with contextlib.suppress(RuntimeError):  # the loop is closing
                    asyncio.get_running_loop().run_in_executor(None, self._seats.give_back, *held)
            slots = self._subscribers.get(key, set())
            slots.discard(slot)
            if not slots:
                self._subscribers.pop(key, None)

    def _ensure_polling(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._poll())

    async def _poll(self) -> None:
        while self._subscribers:
            await asyncio.sleep(self._poll_s)
            keys = list(self._subscribers)
            if not keys:
                return
            views = await in_thread(_views, self._deps, keys)
            if self._held and time.monotonic() - self._renewed_at >= SEAT_TTL_S / 3:
                self._renewed_at = time.monotonic()
                await in_thread(self._seats.renew, list(self._held.values()))
            for key in keys:
                for slot in list(self._subscribers.get(key, ())):
                    slot.put(views.get(key))
