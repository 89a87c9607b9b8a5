"""What a campaign member varied, for a report's curve (the shared report's throughput and
p99 against it): a kind's module in this package declares ``KIND`` and
``curve_point(group, settings) -> (what was varied, its value) | None``. Readers ask
``curve_point`` with a stored report, never naming a kind."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import services.core.campaigns as campaigns_package
from services.core.stored_report import LoadGenReport, load_loadgen_report

# (the member's group record, the run's settings) -> (what was varied, its value) | None.
CurvePoint = Callable[[Mapping[str, Any], Mapping[str, Any]], tuple[str, float] | None]


@cache
def curve_points() -> dict[str, CurvePoint]:
    """Group kind -> its curve_point, for each module here that declares one."""
    found: dict[str, CurvePoint] = {}
    for info in pkgutil.iter_modules(campaigns_package.__path__):
        module = importlib.import_module(f"{campaigns_package.__name__}.{info.name}")
        kind, reader = getattr(module, "KIND", None), getattr(module, "curve_point", None)
        if isinstance(kind, str) and callable(reader):
            found[kind] = reader
    return found


def curve_point(stored: Mapping[str, Any] | LoadGenReport) -> tuple[str, float] | None:
    """(what was varied, its value) for a stored report whose group kind declares one."""
    report = load_loadgen_report(stored)
    group = report.group or {}
    reader = curve_points().get(str(group.get("kind")))
    scenario = report.settings.scenario if report.settings else {}
    return None if reader is None else reader(group, {"scenario": scenario})
