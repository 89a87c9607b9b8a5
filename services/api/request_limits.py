"""Bounds of a GraphQL request body: its size and the nesting of its JSON.

Python's json module recurses once per nesting level: 100,000 nested brackets raise a
RecursionError, which reached clients as a plain HTTP 500. Bodies are decoded here
instead, and anything too large, too deep or not JSON is a RequestRefused that the app
answers as a GraphQL-shaped JSON error with a 4xx status.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

BAD_REQUEST = "BAD_REQUEST"
RESPONSE_TOO_LARGE = "RESPONSE_TOO_LARGE"


class RequestRefused(Exception):
    """A request refused before any GraphQL work; ``status`` is its HTTP status."""

    def __init__(self, status: int, message: str, *, code: str = BAD_REQUEST) -> None:
        self.status = status
        self.message = message
        self.code = code
        super().__init__(message)

    def body(self) -> dict[str, Any]:
        return {"errors": [{"message": self.message, "extensions": {"code": self.code}}]}


def too_large(size: int, max_bytes: int) -> RequestRefused:
    return RequestRefused(
        413,
        f"request body: {size} bytes is above the limit of {max_bytes} "
        "(BENCHSTACK_MAX_REQUEST_BYTES)",
    )


def nesting_depth(value: Any) -> int:
    """How deeply lists and objects nest in ``value`` (a scalar is 0); iterative."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            depth += 1
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth) for child in children)
    return deepest


def decode_bounded_json(data: str | bytes, *, max_bytes: int, max_depth: int) -> Any:
    """``data`` decoded, or RequestRefused naming which bound it breaks."""
    if len(data) > max_bytes:
        raise too_large(len(data), max_bytes)
    deep = RequestRefused(
        400, f"request body: JSON nested deeper than {max_depth} levels (BENCHSTACK_MAX_JSON_DEPTH)"
    )
    try:
        value = json.loads(data)
    except RecursionError:
        raise deep from None
    except json.JSONDecodeError as exc:
        raise RequestRefused(400, f"request body: not JSON: {exc}") from None
    except ValueError as exc:
        # Valid JSON Python refuses to hold, e.g. an integer of more than 4300 digits.
        raise RequestRefused(400, f"request body: {exc}") from None
    if nesting_depth(value) > max_depth:
        raise deep
    return value


async def read_bounded_body(request: Request, max_bytes: int) -> None:
    """A body sent without Content-Length (chunked), read chunk by chunk and refused as
    soon as it passes ``max_bytes``; what was read is left where Starlette's
    ``Request.body()`` finds it (its ``_body``), so the parser reads it from memory."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise RequestRefused(
                413,
                f"request body: more than {max_bytes} bytes, sent without Content-Length, "
                f"is above the limit of {max_bytes} (BENCHSTACK_MAX_REQUEST_BYTES)",
            )
        chunks.append(chunk)
    request._body = b"".join(chunks)
