"""The history of one figure on one system: every stored run of a model on the same
machine, framework, device and scenario, oldest first, with its interval, verdicts and
what changed since the run before it (``benchstack history``).

A series is wider than one system of ``systems.system_of``: the run settings (batch size,
workers, threads, backend options) and the framework's version may change along it, since
those are the changes a user guarding a model's speed over time makes (a new release, a
thread count); each change is named at the run where it happened. The machine comes from
``system_of``, so a restarted agent's runs stay one series, as they stay one system in
``advise``.

A run measured on a BUSY host is kept in the series, marked, and left out of judgements
(change points, the gate): its figure describes the other processes as much as the model.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from services.analysis.systems import system_of
from services.core.environment_diff import diff_environments
from services.core.figures import FIGURES, figures_of, verdicts
from services.core.stored_report import LoadGenReport, load_loadgen_report

# What a user types -> the figure's name in FIGURES.
FIGURE_ALIASES = {
    "throughput": "samples_per_second",
    "mean": "latency_mean",
    "p50": "latency_p50",
    "p90": "latency_p90",
    "p99": "latency_p99",
}


def figure_name(text: str, field_name: str = "--figure") -> str:
    """The FIGURES name of ``text`` (a name or its alias); ValueError naming the accepted."""
    name = FIGURE_ALIASES.get(text, text)
    if name not in FIGURES:
        accepted = ", ".join([*FIGURES, *FIGURE_ALIASES])
        raise ValueError(f"{field_name}: {text!r} is not a figure; accepted: {accepted}")
    return name


def figure_interval(
    stored: Mapping[str, Any] | LoadGenReport, name: str
) -> tuple[float, float] | None:
    """(low, high) of a figure's 95 % interval as the run stored it, or None."""
    confidence = load_loadgen_report(stored).confidence or {}
    item = (confidence.get("figures") or {}).get(name) or {}
    if item.get("low") is None or item.get("high") is None:
        return None
    return float(item["low"]), float(item["high"])


def is_busy(stored: Mapping[str, Any] | LoadGenReport) -> bool:
    """Whether other processes kept the run's host busy (the report's ``host.busy``)."""
    return bool(load_loadgen_report(stored).host.get("busy"))


@dataclass(frozen=True)
class SeriesKey:
    machine: str
    framework: str  # the name; its version may change along the series
    device: str
    scenario: str

    @property
    def label(self) -> str:
        return f"{self.machine}, {self.framework} on {self.device}, {self.scenario}"


def series_key(stored: Mapping[str, Any] | LoadGenReport) -> SeriesKey:
    report = load_loadgen_report(stored)
    machine, _, settings = system_of(report)
    return SeriesKey(
        machine=machine,
        framework=str(report.framework.get("name", "?")),
        device=settings["device"],
        scenario=report.perf.scenario or report.scenario,
    )


def run_settings(stored: Mapping[str, Any] | LoadGenReport) -> dict[str, Any]:
    """The settings a series lets change, flat: named when they do."""
    report = load_loadgen_report(stored)
    _, _, settings = system_of(report)
    flat = {
        "framework version": str(report.framework.get("version", "")),
        "batch size": settings["batch_size"],
        "workers": settings["workers"],
        "threads": settings["threads"] or "auto",
    }
    # The backend's describe() repeats its options (service_time_ms); they are named once.
    return flat | {f"options.{k}": v for k, v in settings["options"].items()}


def settings_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    return [
        f"{key}: {before.get(key, '(absent)')} -> {after.get(key, '(absent)')}"
        for key in sorted(before.keys() | after.keys())
        if before.get(key) != after.get(key)
    ]


@dataclass(frozen=True)
class HistoryPoint:
    run_id: str
    created_at: str
    value: float
    interval: tuple[float, float] | None
    validity: str
    stability_verdict: str  # as LoadGenReport.stability_verdict; "UNKNOWN" if none
    busy: bool
    # What changed since the run before it: settings first, then the environment.
    changes: list[str] = field(default_factory=list)

    @property
    def judged(self) -> bool:
        """Whether judgements may use it: measured on a quiet host, with a figure."""
        return not self.busy and not math.isnan(self.value)


@dataclass(frozen=True)
class Series:
    model: str
    key: SeriesKey
    figure: str
    unit: str
    points: list[HistoryPoint]

    @property
    def judged(self) -> list[HistoryPoint]:
        return [p for p in self.points if p.judged]


def build_series(
    model: str,
    reports: Iterable[Mapping[str, Any] | LoadGenReport],
    figure: str = "samples_per_second",
    *,
    system: str | None = None,
) -> list[Series]:
    """One series per (machine, framework, device, scenario) among ``reports`` (any order;
    performance runs only), oldest run first; ``system``: only series whose label holds it."""
    grouped: dict[SeriesKey, list[LoadGenReport]] = {}
    for stored in reports:
        report = load_loadgen_report(stored)
        if (report.mode or "performance") != "performance" or report.performance is None:
            continue
        key = series_key(report)
        if system is None or system.lower() in key.label.lower():
            grouped.setdefault(key, []).append(report)
    unit = FIGURES[figure][0]
    return [
        Series(model, key, figure, unit, _points(sorted(runs, key=_when), figure))
        for key, runs in sorted(grouped.items(), key=lambda item: item[0].label)
    ]


def _when(report: LoadGenReport) -> tuple[str, str]:
    return report.created_at, report.run_id


def _points(reports: Sequence[LoadGenReport], figure: str) -> list[HistoryPoint]:
    points = []
    for index, report in enumerate(reports):
        changes: list[str] = []
        if index:
            before = reports[index - 1]
            changes = settings_changes(run_settings(before), run_settings(report))
            changes += diff_environments(before.environment, report.environment)
        validity, stability = verdicts(report)
        points.append(
            HistoryPoint(
                run_id=report.run_id,
                created_at=report.created_at,
                value=figures_of(report)[figure],
                interval=figure_interval(report, figure),
                validity=validity,
                stability_verdict=stability,
                busy=is_busy(report),
                changes=changes,
            )
        )
    return points
