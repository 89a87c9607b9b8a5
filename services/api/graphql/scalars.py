"""Helpers for the JSON scalar (free-form settings, reports, environments)."""

from __future__ import annotations

from typing import Any, cast

from strawberry.scalars import JSON


def to_json(value: Any) -> JSON:
    """Mark a JSON-serialisable Python value as the JSON scalar (typing only)."""
    return cast(JSON, value)
