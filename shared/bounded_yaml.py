"""YAML from people and clients, loaded only once it is known to be small.

PyYAML builds whatever a document describes: aliases let 1 KB of text stand for
gigabytes of data ("billion laughs"), and its composer recurses once per nesting level,
so 20,000 nested brackets end in a RecursionError. Here the event stream, which PyYAML
produces without recursion, is checked first: aliases and anchors are refused outright,
nesting and node counts are bounded, and a key written twice in one mapping is refused
(PyYAML keeps the last silently, so a manifest could say one thing and run another).
Only then is the document built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

# libyaml's parser where it is installed: the checks then cost a fraction of the load.
_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class YamlLimits:
    max_chars: int = 256 * 1024
    max_depth: int = 32
    max_nodes: int = 20_000


class YamlRefused(ValueError):
    """The text is not YAML this loader accepts; the message says where and why."""


def _where(event: yaml.Event) -> str:
    mark = event.start_mark
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "?"


class _Mapping:
    """A mapping being read: the keys seen so far, and whether the next node is a key."""

    def __init__(self) -> None:
        self.keys: dict[str, int] = {}  # key -> the line it was first written on
        self.next_is_key = True


def _check_key(event: yaml.Event, open_nodes: list[_Mapping | None]) -> None:
    """Refuse a scalar key its mapping already holds. ``open_nodes``: the collections
    being read, innermost last (None for a sequence)."""
    mapping = open_nodes[-1] if open_nodes else None
    if mapping is None:
        return
    is_key, mapping.next_is_key = mapping.next_is_key, not mapping.next_is_key
    if not is_key or not isinstance(event, yaml.ScalarEvent):
        return
    first = mapping.keys.get(event.value)
    if first is not None:
        raise YamlRefused(
            f"{_where(event)}: key {event.value!r} is written twice in one mapping "
            f"(first on line {first}); accepted: each key once"
        )
    mapping.keys[event.value] = event.start_mark.line + 1 if event.start_mark else 0


def check_events(text: str, limits: YamlLimits) -> None:
    """Raise YamlRefused for text over the limits or with a duplicate key; yaml.YAMLError
    for text that is not YAML."""
    if len(text) > limits.max_chars:
        raise YamlRefused(f"longer than {limits.max_chars} characters (got {len(text)})")
    depth = nodes = 0
    open_nodes: list[_Mapping | None] = []
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.NodeEvent):
            _check_key(event, open_nodes)
        if isinstance(event, yaml.MappingStartEvent):
            open_nodes.append(_Mapping())
        elif isinstance(event, yaml.SequenceStartEvent):
            open_nodes.append(None)
        elif isinstance(event, yaml.CollectionEndEvent):
            open_nodes.pop()
        if isinstance(event, yaml.AliasEvent):
            raise YamlRefused(
                f"{_where(event)}: alias '*{event.anchor}' is not accepted; "
                "accepted: YAML without anchors and aliases (write each value out)"
            )
        if isinstance(event, yaml.NodeEvent) and event.anchor is not None:
            raise YamlRefused(
                f"{_where(event)}: anchor '&{event.anchor}' is not accepted; "
                "accepted: YAML without anchors and aliases (write each value out)"
            )
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > limits.max_depth:
                raise YamlRefused(f"{_where(event)}: nested deeper than {limits.max_depth} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        if isinstance(event, yaml.ScalarEvent | yaml.CollectionStartEvent):
            nodes += 1
            if nodes > limits.max_nodes:
                raise YamlRefused(
                    f"{_where(event)}: more than {limits.max_nodes} values in one document"
                )
        if isinstance(event, yaml.ScalarEvent) and "\x00" in event.value:
            raise YamlRefused(f"{_where(event)}: NUL characters (\\0) are not accepted in text")


def load_bounded(text: str, limits: YamlLimits) -> Any:
    """The one document in ``text``, after check_events.

    Raises YamlRefused for text over the limits or with a value Python cannot hold (an
    integer of more than 4300 digits), and yaml.YAMLError for text that is not YAML.
    """
    check_events(text, limits)
    try:
        return yaml.load(text, Loader=_LOADER)  # a safe loader: see _LOADER
    except ValueError as exc:
        raise YamlRefused(str(exc)) from None
