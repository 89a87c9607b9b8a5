"""An fx node's arguments in the torchfx brick format (fx_brick.py), both ways.

An argument is a JSON scalar, a list, or an object with one tag: ``node`` (an earlier
node), ``tuple``, ``dict`` (pairs), ``slice``, ``ellipsis``, ``float`` (inf, nan),
``dtype``, ``device``, ``memory_format``, ``layout``, ``function``; functions resolve only
through fx_allow's lists.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import fx

from services.workloads.bricks.fx_allow import function_name, resolve_function
from services.workloads.bricks.fx_modules import Unrebuildable

MAX_DEPTH = 16  # nesting of an argument (tuples in lists ...)
_FLOATS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


class BrickFormatError(ValueError):
    """A torchfx file that cannot be read: malformed, too large, or naming what the
    allow-list refuses (DisallowedName is one)."""


def encode_argument(value: Any, depth: int = 0) -> Any:
    """``value`` (an fx argument) as JSON: a scalar, a list, or a one-tag object;
    Unrebuildable if it has no faithful form."""
    if depth > MAX_DEPTH:
        raise Unrebuildable(f"an argument nested deeper than {MAX_DEPTH}")
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": str(value)}
    if isinstance(value, fx.Node):
        return {"node": value.name}
    if isinstance(value, tuple):  # torch.Size included
        return {"tuple": [encode_argument(v, depth + 1) for v in value]}
    if isinstance(value, list):
        return [encode_argument(v, depth + 1) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": [[k, encode_argument(v, depth + 1)] for k, v in value.items()]}
    if isinstance(value, slice):
        return {
            "slice": [encode_argument(p, depth + 1) for p in (value.start, value.stop, value.step)]
        }
    if value is Ellipsis:
        return {"ellipsis": None}
    for tag, kind in (
        ("dtype", torch.dtype),
        ("memory_format", torch.memory_format),
        ("layout", torch.layout),
    ):
        if isinstance(value, kind):
            return {tag: str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    name = function_name(value) if callable(value) else None
    if name is not None:
        return {"function": name}
    raise Unrebuildable(f"an argument of type {type(value).__name__}")


def decode_argument(value: Any, defined: dict[str, fx.Node], depth: int = 0) -> Any:
    """The fx argument ``value`` stands for, its nodes among ``defined`` (those made before
    it); BrickFormatError naming what is wrong and what is accepted."""
    if depth > MAX_DEPTH:
        raise BrickFormatError(f"brick file: an argument nested deeper than {MAX_DEPTH}")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [decode_argument(v, defined, depth + 1) for v in value]
    if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in _DECODERS:
        raise BrickFormatError(
            f"brick file: argument {str(value)[:80]}; accepted: a JSON scalar, a list or "
            f"one of the tags {', '.join(_DECODERS)}"
        )
    ((tag, content),) = value.items()
    return _DECODERS[tag](content, defined, depth + 1)


def _decode_node(content: Any, defined: dict[str, fx.Node], depth: int) -> fx.Node:
    if content not in defined:
        raise BrickFormatError(f"brick file: node {str(content)[:64]!r} is read before it is made")
    return defined[content]


def _decode_items(content: Any, defined: dict[str, fx.Node], depth: int) -> list[Any]:
    if not isinstance(content, list):
        raise BrickFormatError(f"brick file: {str(content)[:80]} is not a list")
    return [decode_argument(v, defined, depth) for v in content]


def _decode_dict(content: Any, defined: dict[str, fx.Node], depth: int) -> dict[str, Any]:
    pairs = _decode_items(content, defined, depth)
    if not all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in pairs):
        raise BrickFormatError("brick file: a dict is a list of [key, value] pairs")
    return {p[0]: p[1] for p in pairs}


def _decode_slice(content: Any, defined: dict[str, fx.Node], depth: int) -> slice:
    parts = _decode_items(content, defined, depth)
    if len(parts) != 3:
        raise BrickFormatError("brick file: a slice is [start, stop, step]")
    return slice(*parts)


def _decode_named(kind: type) -> Callable[[Any, dict[str, fx.Node], int], Any]:
    def decode(content: Any, defined: dict[str, fx.Node], depth: int) -> Any:
        found = getattr(torch, content, None) if isinstance(content, str) else None
        if not isinstance(found, kind):
            raise BrickFormatError(f"brick file: {str(content)[:64]!r} is no torch.{kind.__name__}")
        return found

    return decode


def _decode_device(content: Any, defined: dict[str, fx.Node], depth: int) -> torch.device:
    try:
        return torch.device(str(content)[:64])
    except RuntimeError as exc:
        raise BrickFormatError(f"brick file: device {str(content)[:64]!r}: {exc}") from exc


def _decode_float(content: Any, defined: dict[str, fx.Node], depth: int) -> float:
    if content not in _FLOATS:
        raise BrickFormatError(f"brick file: float {str(content)[:64]!r}; accepted: inf, -inf, nan")
    return _FLOATS[content]


_DECODERS: dict[str, Callable[[Any, dict[str, fx.Node], int], Any]] = {
    "node": _decode_node,
    "tuple": lambda c, d, n: tuple(_decode_items(c, d, n)),
    "dict": _decode_dict,
    "slice": _decode_slice,
    "ellipsis": lambda c, d, n: Ellipsis,
    "float": _decode_float,
    "dtype": _decode_named(torch.dtype),
    "device": _decode_device,
    "memory_format": _decode_named(torch.memory_format),
    "layout": _decode_named(torch.layout),
    "function": lambda c, d, n: resolve_function(str(c)),
}
