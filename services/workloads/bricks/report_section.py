"""The bricks workload's report section (Workload.report_section): the latency constructed
from its measured bricks and how many were measured, reused or missing, in `benchstack
show`, the shared report and its CSV."""

from __future__ import annotations

from typing import Any

from services.core.report_section import ReportSection, figures_section
from services.workloads.bricks.outcome import bricks_metrics


def report_section(document: dict[str, Any]) -> ReportSection:
    options = dict(sorted((document.get("options") or {}).items()))
    return figures_section("latency constructed from bricks", bricks_metrics(document), options)
