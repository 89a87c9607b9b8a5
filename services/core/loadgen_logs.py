"""Read LoadGen's own logs (summary and detail) into plain dictionaries.

Import-light on purpose: the measuring process judges a run from these logs, and tests
and tools read stored logs without LoadGen.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SUMMARY_LINE = re.compile(r"^\s*([^:*=][^:]*?)\s*:\s*(.+?)\s*$")


def _number(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def parse_summary(text: str) -> dict[str, Any]:
    """``key : value`` lines of mlperf_log_summary.txt, values as numbers where they are.

    Keys are LoadGen's own wording (e.g. "90.0th percentile latency (ns)", "Result is"),
    so a figure in a report can be traced to the line it came from.
    """
    values: dict[str, Any] = {}
    section = ""
    for line in text.splitlines():
        if line.startswith("====="):
            continue
        if line.strip() and not line.startswith(" ") and ":" not in line:
            section = line.strip()
            continue
        if section == "Test Parameters Used":
            continue
        match = _SUMMARY_LINE.match(line)
        if match and not line.lstrip().startswith("*"):
            values.setdefault(match.group(1), _number(match.group(2)))
    return values


def parse_detail(text: str) -> dict[str, Any]:
    """The ``:::MLLOG {...}`` records of mlperf_log_detail.txt, key -> value (last wins).

    Warnings and errors are collected under "warnings" and "errors".
    """
    values: dict[str, Any] = {"warnings": [], "errors": []}
    for line in text.splitlines():
        if not line.startswith(":::MLLOG "):
            continue
        try:
            record = json.loads(line.removeprefix(":::MLLOG "))
        except json.JSONDecodeError:
            continue
        meta = record.get("metadata", {})
        if meta.get("is_error"):
            values["errors"].append(str(record.get("value")))
        elif meta.get("is_warning"):
            values["warnings"].append(str(record.get("value")))
        values[record["key"]] = record.get("value")
    return values
