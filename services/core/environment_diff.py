"""The differences between two captured environments (shared/environment.py), one line
each: what a rerun names beside its verdict, since a changed package or CPU can explain a
change in the figures."""

from __future__ import annotations

from typing import Any

# Keys compared apart: packages are listed by name after the dotted paths.
IGNORED = frozenset({"packages"})


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for index, item in enumerate(value):
            _flatten(item, f"{prefix}[{index}]", out)
    else:
        out[prefix] = value


def diff_environments(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """One line per difference, dotted paths first, then changed package versions."""
    flat_before: dict[str, Any] = {}
    flat_after: dict[str, Any] = {}
    _flatten({k: v for k, v in before.items() if k not in IGNORED}, "", flat_before)
    _flatten({k: v for k, v in after.items() if k not in IGNORED}, "", flat_after)
    lines = []
    for key in sorted(flat_before.keys() | flat_after.keys()):
        old, new = flat_before.get(key, "(absent)"), flat_after.get(key, "(absent)")
        if old != new:
            lines.append(f"{key}: {old} -> {new}")
    old_packages: dict[str, str] = before.get("packages") or {}
    new_packages: dict[str, str] = after.get("packages") or {}
    for name in sorted(old_packages.keys() | new_packages.keys()):
        old_v, new_v = old_packages.get(name, "(absent)"), new_packages.get(name, "(absent)")
        if old_v != new_v:
            lines.append(f"packages.{name}: {old_v} -> {new_v}")
    return lines
