"""Refuse a repeated too-costly (or too large) query before it costs anything.

The cost and size limits (graphql/operation_bounds.py) refuse such a query before it is
validated, but the refusal itself still goes through the whole HTTP and GraphQL stack:
routing, the token, a parse, the walk. A client looping on one such query spends
that much of the API for every refusal, and others wait behind it (issue 36: others' p99
went over 1 s under two such loops). A query refused for its cost or its expanded size is
refused for the same body every time, whoever sends it, so this middleware remembers the
bodies it saw refused (by digest, a bounded table) and answers a repeat at once, with the
same error, for a caller whose token this process has already accepted (an unknown token
still gets its 401).
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Where the cost and size limits leave the formatted error of a refused query: the ASGI
# scope is the one dict both this middleware and the GraphQL context (its request) see.
REFUSED_SCOPE_KEY = "benchstack.refused_for_cost"
# Only small bodies are remembered (a costly query is a short one); larger ones pass on.
MAX_REMEMBERED_BODY_BYTES = 64 * 1024
MAX_REMEMBERED = 1024


class RepeatRefusals:
    """A plain ASGI middleware for POST requests under ``path_prefix``.

    ``token_known(authorization_header)`` says whether the caller is one this process has
    already authenticated (the token cache); only those get the early answer.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        token_known: Callable[[str | None], bool],
        path_prefix: str = "/graphql",
    ) -> None:
        self.app = app
        self.token_known = token_known
        self.path_prefix = path_prefix
        self._refused: OrderedDict[bytes, bytes] = OrderedDict()  # digest -> response body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        size = _declared_size(scope)
        if (
            scope["type"] != "http"
            or scope.get("method") != "POST"
            or not scope.get("path", "").startswith(self.path_prefix)
            or size is None
            or size > MAX_REMEMBERED_BODY_BYTES
        ):
            await self.app(scope, receive, send)
            return
        body, replay = await _buffered(receive)
        if body is None:  # the client went away, or sent more than it declared
            await self.app(scope, replay, send)
            return
        digest = hashlib.blake2b(body, digest_size=16).digest()
        known = self._refused.get(digest)
        if known is not None and self.token_known(_header(scope, b"authorization")):
            self._refused.move_to_end(digest)
            await _answer(send, known)
            return
        await self.app(scope, replay, send)
        refused = scope.get(REFUSED_SCOPE_KEY)
        if refused is not None:
            self._refused[digest] = json.dumps({"data": None, "errors": [refused]}).encode()
            while len(self._refused) > MAX_REMEMBERED:
                self._refused.popitem(last=False)


def _declared_size(scope: Scope) -> int | None:
    raw = _header(scope, b"content-length")
    return int(raw) if raw is not None and raw.isdigit() else None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


async def _buffered(receive: Receive) -> tuple[bytes | None, Receive]:
    """The whole body (at most the declared size: the caller checked it is small) and a
    ``receive`` that hands it to the app as one message."""
    chunks: list[bytes] = []
    total = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None, _replaying([message], receive)
        chunk = message.get("body", b"")
        total += len(chunk)
        chunks.append(chunk)
        if total > MAX_REMEMBERED_BODY_BYTES:
            more = message.get("more_body", False)
            return None, _replaying([_request(b"".join(chunks), more)], receive)
        if not message.get("more_body", False):
            body = b"".join(chunks)
            return body, _replaying([_request(body, False)], receive)


def _request(body: bytes, more_body: bool) -> Message:
    return {"type": "http.request", "body": body, "more_body": more_body}


def _replaying(first: list[Message], receive: Receive) -> Receive:
    pending = list(first)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay


async def _answer(send: Send, body: bytes) -> None:
    headers: list[Any] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})
