"""Helpers for the JSON scalar (free-form settings, reports, environments), and for types
copied from a row or a service's dataclass field by field."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar, cast

from strawberry.scalars import JSON

T = TypeVar("T")


def to_json(value: Any) -> JSON:
    """Mark a JSON-serialisable Python value as the JSON scalar (typing only)."""
    return cast(JSON, value)


def copied(cls: type[T], source: object, **given: Any) -> T:
    """A GraphQL type made from ``source``: each field taken from the attribute of the same
    name, but those ``given`` (renamed, converted or computed ones). A field ``source`` lacks
    and nobody gave is an AttributeError naming it, at the first request that builds one."""
    names = [f.name for f in dataclasses.fields(cls) if f.init and f.name not in given]  # type: ignore[arg-type]
    return cls(**{name: getattr(source, name) for name in names}, **given)
