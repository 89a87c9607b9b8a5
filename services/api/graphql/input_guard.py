"""Refuse NUL characters and non-finite numbers in any input, before a resolver runs.

Neither can be stored (PostgreSQL text and JSON refuse NUL; JSON has no Infinity or
NaN), and a resolver meeting one deep in a database call could only fail with a masked
error. Checked once here for every operation, over HTTP and websockets alike: the
variables as sent and the literals written in the document. The refusal is a GraphQL
error with code BAD_USER_INPUT naming the field, e.g. ``input.settings.targetQps``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from graphql import ExecutionResult, GraphQLError
from graphql.language import (
    ArgumentNode,
    DocumentNode,
    FloatValueNode,
    Node,
    ObjectFieldNode,
    StringValueNode,
    ValueNode,
    Visitor,
    visit,
)
from strawberry.extensions import SchemaExtension

from services.api.short_cache import ShortCache

BAD_USER_INPUT = "BAD_USER_INPUT"
NUL_ACCEPTED = "text without NUL characters"
FINITE_ACCEPTED = "a finite number"


def refusal(field: str, value: Any, nodes: list[Node] | None = None) -> GraphQLError:
    """The error for a NUL-bearing string or a non-finite number at ``field``."""
    if isinstance(value, str):
        why, accepted = "NUL characters (\\u0000) are not accepted", NUL_ACCEPTED
    else:
        why, accepted = f"{value!r} is not accepted", FINITE_ACCEPTED
    return GraphQLError(
        f"{field}: {why}; accepted: {accepted}",
        nodes,
        extensions={"code": BAD_USER_INPUT, "field": field, "accepted": accepted},
    )


def _hostile(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    return isinstance(value, float) and not math.isfinite(value)


def hostile_in_value(root: str, value: Any) -> tuple[str, Any] | None:
    """The first (path, value) inside a decoded JSON value that is refused, else None.

    Iterative: the value's nesting is bounded where it is decoded, but this must not
    recurse either way. Keys are checked as well as values.
    """
    stack: list[tuple[str, Any]] = [(root, value)]
    while stack:
        path, item = stack.pop()
        if _hostile(item):
            return path, item
        if isinstance(item, dict):
            for key, child in item.items():
                # The key is part of the path shown to the client: NUL written out.
                shown = str(key).replace("\x00", "\\u0000")
                child_path = f"{path}.{shown}" if path else shown
                if _hostile(key):
                    return child_path, key
                stack.append((child_path, child))
        elif isinstance(item, list):
            stack.extend((f"{path}[{i}]", child) for i, child in enumerate(item))
    return None


class _LiteralFinder(Visitor):
    """Collects the first refused literal and the argument path it is written under."""

    def __init__(self) -> None:
        super().__init__()
        self.found: GraphQLError | None = None
        self._path: list[str] = []

    def enter_argument(self, node: ArgumentNode, *_: Any) -> None:
        self._path.append(node.name.value)

    def leave_argument(self, *_: Any) -> None:
        self._path.pop()

    def enter_object_field(self, node: ObjectFieldNode, *_: Any) -> None:
        self._path.append(node.name.value)

    def leave_object_field(self, *_: Any) -> None:
        self._path.pop()

    def _check(self, node: ValueNode, value: Any) -> Any:
        if self.found is None and _hostile(value):
            self.found = refusal(".".join(self._path) or "(query)", value, [node])
            return Visitor.BREAK
        return None

    def enter_string_value(self, node: StringValueNode, *_: Any) -> Any:
        return self._check(node, node.value)

    def enter_float_value(self, node: FloatValueNode, *_: Any) -> Any:
        # "1e999" is a valid GraphQL float literal and reads as infinity.
        return self._check(node, float(node.value))


# A document's literals are the same each time its text comes again: checked once per text.
_CHECKED_TEXTS: ShortCache[GraphQLError | None] = ShortCache(math.inf, max_keys=512)


def hostile_in_document(document: DocumentNode) -> GraphQLError | None:
    finder = _LiteralFinder()
    visit(document, finder)
    return finder.found


class InputGuard(SchemaExtension):
    """Ends an operation with a BAD_USER_INPUT error instead of executing it."""

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        error: GraphQLError | None = None
        found = hostile_in_value("", context.variables or {})
        if found is not None:
            error = refusal(*found)
        elif context.graphql_document is not None:
            document = context.graphql_document
            if isinstance(context.query, str):
                error = _CHECKED_TEXTS.get(context.query, lambda: hostile_in_document(document))
            else:
                error = hostile_in_document(document)
        if error is not None:
            # A result set before execution makes Strawberry skip executing the operation.
            context.result = ExecutionResult(data=None, errors=[error])
        yield
