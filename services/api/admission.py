"""Admission: at most N GraphQL requests in progress per API process, the rest wait in turn.

An asyncio server starts every request it reads at once, so under load each one shares the
process with all the others and finishes only when they have all progressed: latency grows
with the number in flight, and the slowest are those that arrived at an unlucky moment.
With a few in progress and the rest queued first come first served, each request waits
about as long as the one before it, and the process spends less time switching between
half-done requests (benchmarks/api_load.py measures both with --baseline-env).
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Receive, Scope, Send


class AdmissionLimit:
    """A plain ASGI middleware: HTTP requests under ``path_prefix`` take one of ``limit``
    places before the app sees them; other paths (probes, metrics, pages) and websockets
    pass straight through. ``limit`` 0 admits everything."""

    def __init__(self, app: ASGIApp, *, limit: int, path_prefix: str = "/graphql") -> None:
        self.app = app
        self.limit = limit
        self.path_prefix = path_prefix
        # Made on first use: a semaphore belongs to the running event loop.
        self._places: asyncio.Semaphore | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.limit <= 0
            or scope["type"] != "http"
            or not scope.get("path", "").startswith(self.path_prefix)
        ):
            await self.app(scope, receive, send)
            return
        if self._places is None:
            self._places = asyncio.Semaphore(self.limit)
        # asyncio's semaphore wakes its waiters in the order they came: first come, first served.
        async with self._places:
            await self.app(scope, receive, send)
