"""The training workload's report section (Workload.report_section): the settings it
trained with and its stored figures, in `benchstack show`, the shared report and its CSV."""

from __future__ import annotations

from typing import Any

from services.core.report_section import ReportSection, figures_section
from services.workloads.training.outcome import training_metrics
from services.workloads.training.summary import setting_pairs


def report_section(document: dict[str, Any]) -> ReportSection:
    settings = {key: value for key, _, value in setting_pairs(document)}
    return figures_section("training steps timed", training_metrics(document), settings)
