"""One clock for every timestamp column (timezone-aware UTC)."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """SQLite returns naive datetimes for timezone columns; treat them as UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
