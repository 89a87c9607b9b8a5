"""The generative workload's report section (Workload.report_section): its settings,
LoadGen's verdict with its reasons, whether the bounds were met, and every token figure
with its 95 % interval, in `benchstack show`, the shared report and its CSV."""

from __future__ import annotations

from typing import Any

from services.core.report_section import ReportSection
from services.workloads.generative.figures import UNITS
from services.workloads.generative.summary import (
    bounds_met,
    figure_label,
    figure_of,
    figure_text,
    setting_pairs,
)


def report_section(document: dict[str, Any]) -> ReportSection:
    settings = {key: value for key, _, value in setting_pairs(document) if value != "—"}
    verdict = document.get("loadgen") or {}
    requests = document.get("requests") or {}
    met = bounds_met(document)
    rows: list[tuple[str, str]] = [
        ("settings", ", ".join(f"{k}={v}" for k, v in settings.items())),
        (
            "LoadGen",
            "; ".join([str(verdict.get("validity", "MISSING")), *verdict.get("reasons", [])]),
        ),
    ]
    if met is not None:
        rows.append(("bounds", "met" if met else "not met"))
    elif document.get("bounds"):
        rows.append(("bounds", "not judged: LoadGen's verdict is INVALID for another reason"))
    rows += [(figure_label(name), figure_text(document, name)) for name in UNITS]
    failures = ", ".join(
        f"{n} x {reason}" for reason, n in (requests.get("failures") or {}).items()
    )
    rows.append(
        ("failed requests", f"{requests.get('failed', 0)}{f' ({failures})' if failures else ''}")
    )
    columns: dict[str, Any] = {"validity": verdict.get("validity"), "bounds_met": met}
    for name in UNITS:
        figure = figure_of(document, name)
        columns |= {
            name: figure["estimate"],
            f"{name}_low": figure["low"],
            f"{name}_high": figure["high"],
        }
    columns |= {
        "failed_requests": requests.get("failed"),
        "output_tokens": requests.get("output_tokens"),
    }
    return ReportSection("generative serving (token latencies)", tuple(rows), columns)
