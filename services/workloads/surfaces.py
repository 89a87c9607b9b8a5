"""What the edges show of a workload, read from its declaration (Workload.report_section,
Workload.web_view): the readers ask here and name no workload."""

from __future__ import annotations

import importlib.resources
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from services.core.report_section import ReportSection
from services.core.stored_report import OutcomeReport, StoredReport, load_report
from services.core.workload import entry
from services.workloads import workloads


def report_section_of(stored: Mapping[str, Any] | StoredReport | None) -> ReportSection | None:
    """The section a run's workload declares for its stored outcome; None for a LoadGen
    report, or a workload that declares none (or is no longer installed)."""
    report = load_report(stored)
    if not isinstance(report, OutcomeReport):
        return None
    workload = workloads().get(report.kind)
    if workload is None or workload.report_section is None:
        return None
    section: ReportSection = entry(workload.report_section)(report.document)
    return section


def section_columns(stored: Mapping[str, Any] | StoredReport | None) -> dict[str, Any]:
    """The CSV columns of a run's section, each under its workload's name
    (``<kind>.<column>``, so two workloads' columns never collide); {} without one."""
    report = load_report(stored)
    section = report_section_of(report)
    if section is None or not isinstance(report, OutcomeReport):
        return {}
    return {f"{report.kind}.{name}": value for name, value in section.columns.items()}


def web_view_file(name: str) -> Path | None:
    """The JS module a workload declares as its run-page section; None where it declares
    none, or the name is no workload's."""
    workload = workloads().get(name)
    if workload is None or workload.web_view is None:
        return None
    package, _, path = workload.web_view.partition(":")
    found = Path(str(importlib.resources.files(package).joinpath(path)))
    if not found.is_file():
        raise FileNotFoundError(f"workload {name}: web_view {workload.web_view} is not a file")
    return found


def web_view_names() -> list[str]:
    """The workloads that declare a run-page section, by name."""
    return sorted(name for name, w in workloads().items() if w.web_view is not None)
