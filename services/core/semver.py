"""Semantic-version precedence: the one rule both modes use to pick a model's version.

A name without a version means its highest semantic version, in the catalogue and among
registered models, embedded and stack alike (semver.org precedence; build metadata is
ignored for the order and breaks ties as text, so the choice is deterministic).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from services.core.manifest import SEMVER_RE

T = TypeVar("T")


def semver_key(version: str) -> tuple[Any, ...]:
    """Sort key of a semantic version by semver.org precedence (build metadata ignored):
    1.0.0-alpha < 1.0.0-alpha.1 < 1.0.0-beta < 1.0.0-rc.1 < 1.0.0 < 1.0.1 < 1.10.0."""
    match = SEMVER_RE.match(version)
    if match is None:  # every stored version passed the manifest's check; kept as a guard
        return (-1, -1, -1, 0, ())
    major, minor, patch, pre, _build = match.groups()
    if pre is None:
        # A release ranks above each of its pre-releases.
        return (int(major), int(minor), int(patch), 1, ())
    # Numeric identifiers rank below alphanumeric ones and compare as numbers.
    ids = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (int(major), int(minor), int(patch), 0, ids)


def pick_version(
    items: Iterable[T], version_of: Callable[[T], str], wanted: str | None
) -> T | None:
    """The item with exactly ``wanted`` (when given), else the highest semantic version."""
    candidates = [item for item in items if not wanted or version_of(item) == wanted]
    return max(
        candidates, key=lambda item: (semver_key(version_of(item)), version_of(item)), default=None
    )
