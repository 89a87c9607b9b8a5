"""Stored run reports as rows to share: who measured each (agent, machine, host, threads),
what it measured with its 95 % intervals, and which settings set the rows of a group apart.

A row names its agent and machine because a fan-out's runs differ by where they ran, and a
run id alone says nothing to the reader of a shared file. The settings that differ are
found, not listed by hand: every leaf of a run's settings (scenario, backend options, the
agent's own settings) is compared across the group, and those with more than one value
become columns (``setting.<path>``) and the rows' labels.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from services.analysis.systems import machine_of
from services.core.shown_figures import (
    OFFLINE_LATENCY_NOTE,
    ShownFigure,
    figure_named,
    host_verdict,
    shown_figures,
)
from services.core.shown_figures import is_offline as offline_scenario
from services.core.stored_report import LoadGenReport, StoredReport, load_loadgen_report
from services.workloads.surfaces import section_columns

CSV_COLUMNS = (
    "run_id", "group_kind", "group_id", "agent", "machine", "hostname", "threads",
    "inter_op_threads", "model", "framework", "framework_version", "device", "scenario",
    "batch_size", "workers", "validity", "stability", "host_busy", "other_cpu_share",
    "samples_per_second", "samples_per_second_low", "samples_per_second_high",
    "latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "sut_latency_p99_ms",
    "sut_latency_p99_low_ms", "sut_latency_p99_high_ms", "interval_reason",
)  # fmt: skip
SETTING_PREFIX = "setting."
# Leaves of a run's settings that never set runs apart in a reader's eyes: its group's
# bookkeeping, paths, the data seed, and the constraints (a fan-out pins each run to its
# agent there; the agent is a column of its own).
_NOT_A_SETTING = ("group", "manifest_dir", "seed", "constraints")
# Settings that already have a column of their own (CSV_COLUMNS), under that column's name.
_COLUMN_OF = {
    "agent": "agent",
    "machine": "machine",
    "backend_options.intra_op_threads": "threads",
    "backend_options.inter_op_threads": "inter_op_threads",
    "backend_options.device": "device",
    "batch_size": "batch_size",
    "workers": "workers",
    "framework": "framework",
    "model": "model",
    "scenario.scenario": "scenario",
}


Stored = Mapping[str, Any] | StoredReport


def is_offline(stored: Stored) -> bool:
    return offline_scenario(load_loadgen_report(stored))


def _figure(value: float | None) -> float | None:
    """A figure for a row: one LoadGen did not give (NaN, a stored null) is empty."""
    return None if value is None or math.isnan(value) else value


def _shown(figures: list[ShownFigure], name: str) -> float | None:
    """A figure's value where the one rule shows it (never an Offline latency), else empty."""
    figure = figure_named(figures, name)
    return None if figure is None else figure.value


def _interval(report: LoadGenReport, name: str) -> dict[str, Any]:
    return ((report.confidence or {}).get("figures") or {}).get(name) or {}


def _leaves(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key in sorted(value):
            yield from _leaves(value[key], f"{path}.{key}" if path else str(key))
    else:
        yield path, value


def settings_of(stored: Stored) -> dict[str, Any]:
    """Every setting of a run as ``path -> value``: its request, the threads it applied and
    the agent and machine that measured it."""
    report = load_loadgen_report(stored)
    asked = asdict(report.settings) if report.settings else {}
    settings = {k: v for k, v in asked.items() if k not in _NOT_A_SETTING}
    applied = report.agent.get("backend_options") or {}
    leaves = dict(_leaves(settings, ""))
    for name in ("intra_op_threads", "inter_op_threads"):
        if applied.get(name) is not None:
            leaves[f"backend_options.{name}"] = applied[name]
    leaves["agent"] = agent_of(report)
    leaves["machine"] = machine_name(report)
    return leaves


def differing(reports: Sequence[Stored]) -> list[str]:
    """The settings' paths whose values are not the same in every run, in path order."""
    if len(reports) < 2:
        return []
    each = [settings_of(r) for r in reports]
    paths = sorted({path for leaves in each for path in leaves})
    return [
        path
        for path in paths
        if len({json.dumps(leaves.get(path), sort_keys=True) for leaves in each}) > 1
    ]


def agent_of(stored: Stored) -> str:
    """The agent id that measured the run; embedded runs name their host."""
    report = load_loadgen_report(stored)
    agent = str(report.agent_id or report.agent.get("id") or "")
    hostname = report.environment.get("hostname") or "?"
    return agent or f"embedded on {hostname}"


def machine_name(stored: Stored) -> str:
    report = load_loadgen_report(stored)
    agent_settings = report.agent.get("settings") or {}
    hostname = report.environment.get("hostname") or "?"
    return machine_of(report.agent_id, agent_settings) if report.agent_id else f"local:{hostname}"


def _threads(report: LoadGenReport, name: str) -> Any:
    applied = report.agent.get("backend_options") or {}
    if applied.get(name) is not None:
        return applied[name]
    return getattr(report.settings.backend_options, name) if report.settings else None


def row_of(stored: Stored) -> dict[str, Any]:
    """One run as a flat row, in CSV_COLUMNS."""
    report = load_loadgen_report(stored)
    perf = report.performance
    shown = shown_figures(report)
    settings = report.settings
    group = report.group or {}
    load = report.host.get("load") or {}
    host = host_verdict(report.host)
    sps, p99 = _interval(report, "samples_per_second"), _interval(report, "latency_p99")
    reasons = dict.fromkeys(str(i["reason"]) for i in (sps, p99) if i.get("reason"))
    if not report.confidence:
        reasons = {"no intervals recorded (run stored before them)": None}
    offline = is_offline(report)
    return {
        "run_id": report.run_id,
        "group_kind": group.get("kind", ""),
        "group_id": group.get("id", ""),
        "agent": agent_of(report),
        "machine": machine_name(report),
        "hostname": report.environment.get("hostname", ""),
        "threads": _threads(report, "intra_op_threads"),
        "inter_op_threads": _threads(report, "inter_op_threads"),
        # A workload's outcome report holds no model section: its row's model is empty.
        "model": f"{report.model.get('name', '')} {report.model.get('version', '')}".strip(),
        "framework": report.framework.get("name", ""),
        "framework_version": report.framework.get("version", ""),
        "device": settings.backend_options.device if settings else "",
        "scenario": report.scenario,
        "batch_size": report.batch_size,
        "workers": settings.workers if settings else 1,
        "validity": report.validity,
        "stability": report.stability.verdict if report.stability else "not recorded",
        # BUSY as every view says it: others' CPU share, or an overlapping measurement.
        "host_busy": host.busy,
        "other_cpu_share": load.get("other_cpu_share"),
        "samples_per_second": _figure(perf.samples_per_second) if perf else None,
        "samples_per_second_low": sps.get("low"),
        "samples_per_second_high": sps.get("high"),
        "latency_p50_ms": _shown(shown, "latency_p50"),
        "latency_p90_ms": _shown(shown, "latency_p90"),
        "latency_p99_ms": _shown(shown, "latency_p99"),
        "sut_latency_p99_ms": None if offline else p99.get("estimate"),
        "sut_latency_p99_low_ms": None if offline else p99.get("low"),
        "sut_latency_p99_high_ms": None if offline else p99.get("high"),
        "interval_reason": OFFLINE_LATENCY_NOTE if offline else "; ".join(reasons),
    }


def setting_columns(reports: Sequence[Stored]) -> list[str]:
    """``setting.<path>`` for each differing setting without a column of its own."""
    return [SETTING_PREFIX + p for p in differing(reports) if p not in _COLUMN_OF]


def rows_of(reports: Sequence[Stored]) -> list[dict[str, Any]]:
    """Each run's row with the settings that set it apart (``setting.<path>`` columns)."""
    columns = setting_columns(reports)
    rows = []
    for stored in reports:
        report = load_loadgen_report(stored)
        leaves = settings_of(report)
        row = row_of(report)
        for column in columns:
            row[column] = leaves.get(column.removeprefix(SETTING_PREFIX))
        # The columns of its workload's report section (Workload.report_section), if any.
        row.update(section_columns(stored))
        rows.append(row)
    return rows


def section_column_names(reports: Sequence[Stored]) -> list[str]:
    """Every report section column the runs have, in the order first met."""
    return list(dict.fromkeys(name for r in reports for name in section_columns(r)))


def labels_of(reports: Sequence[Stored], rows: Sequence[dict[str, Any]]) -> list[str]:
    """What sets each row apart, short enough for a chart's axis: the agent when agents
    differ, then each other differing setting by its column's name (the machine is the
    agent's); the run id when nothing differs. Two rows alike get " #n"."""
    paths = [p for p in differing(reports) if p != "machine"]
    labels = []
    for row in rows:
        parts = []
        for path in paths:
            name = _COLUMN_OF.get(path) or path.split(".")[-1]
            value = row[name] if path in _COLUMN_OF else row[SETTING_PREFIX + path]
            parts.append(str(value) if name == "agent" else f"{name}={value}")
        labels.append(" · ".join(parts) or str(row["run_id"])[:8])
    seen: dict[str, int] = {}
    unique = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        unique.append(label if labels.count(label) == 1 else f"{label} #{seen[label]}")
    return unique


def write_csv(reports: Sequence[Stored], path: Path) -> int:
    columns = [*CSV_COLUMNS, *setting_columns(reports), *section_column_names(reports)]
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, restval="")
        writer.writeheader()
        for row in rows_of(reports):
            writer.writerow({k: "" if v is None else _csv_value(v) for k, v in row.items()})
    return len(reports)


def _csv_value(value: Any) -> Any:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else value
