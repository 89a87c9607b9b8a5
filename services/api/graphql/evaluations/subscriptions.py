"""evaluationUpdates(id): the evaluation each time its state or progress changes.

Polls the database (the source of truth every worker writes) rather than relaying broker
events, so an update can never be missed between connecting and the next event.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import strawberry

from services.api.context import in_thread
from services.api.graphql.evaluations.queries import _one
from services.api.graphql.evaluations.types import EvaluationType
from shared.db.states import FINAL_STATE_NAMES

POLL_SECONDS = 0.2


@strawberry.type
class EvaluationSubscriptions:
    @strawberry.subscription
    async def evaluation_updates(
        self, info: strawberry.Info, id: str
    ) -> AsyncGenerator[EvaluationType | None, None]:
        owner = info.context.require_user()
        deps = info.context.deps
        last: tuple[str, int, str] | None = None
        while True:
            current = await in_thread(_one, deps, owner, id)
            if current is None:
                yield None  # unknown, or not the caller's: one null, then the stream ends
                return
            fingerprint = (current.state.value, current.shards_ready, current.reason)
            if fingerprint != last:
                last = fingerprint
                yield current
            if current.state.value in FINAL_STATE_NAMES:
                return
            await asyncio.sleep(POLL_SECONDS)
