"""evaluationUpdates(id): the evaluation each time its state or progress changes.

Polls the database (the source of truth every worker writes) rather than relaying broker
events, so an update can never be missed between connecting and the next event; one
poller per API process serves every subscriber (watcher.py).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import strawberry

from services.api.graphql.evaluations.types import EvaluationType
from services.api.graphql.evaluations.watcher import EvaluationWatcher

POLL_SECONDS = 0.2


@strawberry.type
class EvaluationSubscriptions:
    @strawberry.subscription
    async def evaluation_updates(
        self, info: strawberry.Info, id: str
    ) -> AsyncGenerator[EvaluationType | None, None]:
        owner = info.context.require_user()
        deps = info.context.deps
        if deps.watcher is None:
            deps.watcher = EvaluationWatcher(
                deps,
                poll_s=POLL_SECONDS,
                max_per_user=deps.settings.max_subscriptions_per_user,
            )
        watcher: EvaluationWatcher = deps.watcher
        async for view in watcher.updates(owner, id):
            yield view
