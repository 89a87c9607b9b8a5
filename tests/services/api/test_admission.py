"""At most N GraphQL requests run at once per process; the rest are admitted in the order
they came; other paths and a limit of 0 are not held."""

from __future__ import annotations

import asyncio
from typing import Any

from services.api.admission import AdmissionLimit


class SlowApp:
    def __init__(self) -> None:
        self.running = 0
        self.most = 0
        self.started: list[int] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.started.append(scope["n"])
        self.running += 1
        self.most = max(self.most, self.running)
        await asyncio.sleep(0.01)
        self.running -= 1


async def _requests(admission: AdmissionLimit, path: str, count: int) -> None:
    async def nothing(*_: Any) -> None:
        return None

    await asyncio.gather(
        *(admission({"type": "http", "path": path, "n": n}, nothing, nothing) for n in range(count))
    )


def test_graphql_requests_wait_their_turn_in_order() -> None:
    app = SlowApp()
    asyncio.run(_requests(AdmissionLimit(app, limit=3), "/graphql", 12))
    assert app.most == 3
    assert app.started == list(range(12))


def test_other_paths_and_no_limit_are_not_held() -> None:
    for path, limit in (("/healthz", 3), ("/graphql", 0)):
        app = SlowApp()
        asyncio.run(_requests(AdmissionLimit(app, limit=limit), path, 12))
        assert app.most == 12
