"""A body refused for its cost is answered at once when it comes again, with the same
error, without entering the app; other bodies, unknown callers and large bodies go through."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from services.api.graphql import operation_bounds
from services.api.repeat_refusals import REFUSED_SCOPE_KEY, RepeatRefusals
from tests.services.api.conftest import api_with
from tests.services.api.graphql.test_query_cost import ATTACK

ERROR = {"message": "too costly", "extensions": {"code": "QUERY_TOO_COSTLY"}}


class RefusingApp:
    """Refuses (as the cost limit does) every body that contains b"costly"; counts calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.calls += 1
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.bodies.append(body)
        if b"costly" in body:
            scope[REFUSED_SCOPE_KEY] = ERROR
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"from the app"})


def post(app: Any, body: bytes, token: str | None = "known", chunks: int = 1) -> tuple[int, bytes]:
    headers = [(b"content-length", str(len(body)).encode())]
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    scope = {"type": "http", "method": "POST", "path": "/graphql", "headers": headers}
    size = max(1, len(body) // chunks)
    parts = [body[i : i + size] for i in range(0, len(body), size)] or [b""]
    messages = [
        {"type": "http.request", "body": part, "more_body": i < len(parts) - 1}
        for i, part in enumerate(parts)
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def middleware(app: RefusingApp) -> RepeatRefusals:
    return RepeatRefusals(app, token_known=lambda header: header == "Bearer known")


def test_a_refused_body_is_answered_without_the_app_the_second_time() -> None:
    app = RefusingApp()
    refusals = middleware(app)
    assert post(refusals, b'{"query": "costly"}', chunks=3) == (200, b"from the app")
    status, body = post(refusals, b'{"query": "costly"}')
    assert status == 200 and b"QUERY_TOO_COSTLY" in body and b"too costly" in body
    assert app.calls == 1
    # The app got the body whole although it came in three pieces.
    assert app.bodies == [b'{"query": "costly"}']


def test_other_bodies_unknown_callers_and_large_bodies_reach_the_app() -> None:
    app = RefusingApp()
    refusals = middleware(app)
    post(refusals, b'{"query": "costly"}')
    assert post(refusals, b'{"query": "cheap"}') == (200, b"from the app")
    assert post(refusals, b'{"query": "costly"}', token="stranger") == (200, b"from the app")
    assert post(refusals, b'{"query": "costly"}', token=None) == (200, b"from the app")
    large = b'{"query": "costly", "pad": "' + b"x" * 70_000 + b'"}'
    post(refusals, large)
    post(refusals, large)
    assert app.calls == 6


def test_the_api_answers_a_repeated_costly_query_alike_and_a_stranger_still_gets_401(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    judged: list[int] = []
    real_verdict = operation_bounds.OperationBounds._verdict

    def counted_verdict(self: Any, *args: Any) -> Any:
        judged.append(1)
        return real_verdict(self, *args)

    monkeypatch.setattr(operation_bounds.OperationBounds, "_verdict", counted_verdict)
    with api_with(tmp_path, api_token_cache_seconds=60) as api:
        token = api.token("looper")
        first = api.gql(token, ATTACK)
        second = api.gql(token, ATTACK)
        assert first.status_code == second.status_code == 200
        assert first.json() == second.json()
        assert len(judged) == 1  # the repeat never reached the cost limit
        assert first.json()["errors"][0]["extensions"]["code"] == "QUERY_TOO_COSTLY"
        assert api.gql("not-a-token", ATTACK).status_code == 401
        assert api.gql(None, ATTACK).status_code == 401
