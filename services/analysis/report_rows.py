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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from services.analysis.systems import machine_of

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
# Offline issues every sample at once: its latencies are places in a queue, not latencies.
OFFLINE_LATENCY_NOTE = "Offline: latencies are queue positions, not shown"


def is_offline(report: dict[str, Any]) -> bool:
    return str(report.get("scenario") or "").lower() == "offline"


def _ms(value_ns: Any) -> float | None:
    return None if value_ns is None else float(value_ns) / 1e6


def _interval(report: dict[str, Any], name: str) -> dict[str, Any]:
    return ((report.get("confidence") or {}).get("figures") or {}).get(name) or {}


def _leaves(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key in sorted(value):
            yield from _leaves(value[key], f"{path}.{key}" if path else str(key))
    else:
        yield path, value


def settings_of(report: dict[str, Any]) -> dict[str, Any]:
    """Every setting of a run as ``path -> value``: its request, the threads it applied and
    the agent and machine that measured it."""
    settings = {k: v for k, v in (report.get("settings") or {}).items() if k not in _NOT_A_SETTING}
    applied = (report.get("agent") or {}).get("backend_options") or {}
    leaves = dict(_leaves(settings, ""))
    for name in ("intra_op_threads", "inter_op_threads"):
        if applied.get(name) is not None:
            leaves[f"backend_options.{name}"] = applied[name]
    leaves["agent"] = agent_of(report)
    leaves["machine"] = machine_name(report)
    return leaves


def differing(reports: Sequence[dict[str, Any]]) -> list[str]:
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


def agent_of(report: dict[str, Any]) -> str:
    """The agent id that measured the run; embedded runs name their host."""
    agent = str(report.get("agent_id") or (report.get("agent") or {}).get("id") or "")
    hostname = (report.get("environment") or {}).get("hostname") or "?"
    return agent or f"embedded on {hostname}"


def machine_name(report: dict[str, Any]) -> str:
    agent_settings = (report.get("agent") or {}).get("settings") or {}
    agent = str(report.get("agent_id") or "")
    hostname = (report.get("environment") or {}).get("hostname") or "?"
    return machine_of(agent, agent_settings) if agent else f"local:{hostname}"


def _threads(report: dict[str, Any], name: str) -> Any:
    applied = (report.get("agent") or {}).get("backend_options") or {}
    if applied.get(name) is not None:
        return applied[name]
    return ((report.get("settings") or {}).get("backend_options") or {}).get(name)


def row_of(report: dict[str, Any]) -> dict[str, Any]:
    """One run as a flat row, in CSV_COLUMNS."""
    perf = report.get("performance") or {}
    latency = (perf.get("latency") or {}).get("percentiles_ns") or {}
    settings = report.get("settings") or {}
    group = report.get("group") or {}
    load = (report.get("host") or {}).get("load") or {}
    sps, p99 = _interval(report, "samples_per_second"), _interval(report, "latency_p99")
    reasons = dict.fromkeys(str(i["reason"]) for i in (sps, p99) if i.get("reason"))
    if not report.get("confidence"):
        reasons = {"no intervals recorded (run stored before them)": None}
    offline = is_offline(report)
    return {
        "run_id": report["run_id"],
        "group_kind": group.get("kind", ""),
        "group_id": group.get("id", ""),
        "agent": agent_of(report),
        "machine": machine_name(report),
        "hostname": (report.get("environment") or {}).get("hostname", ""),
        "threads": _threads(report, "intra_op_threads"),
        "inter_op_threads": _threads(report, "inter_op_threads"),
        "model": f"{report['model']['name']} {report['model']['version']}",
        "framework": (report.get("framework") or {}).get("name", ""),
        "framework_version": (report.get("framework") or {}).get("version", ""),
        "device": (settings.get("backend_options") or {}).get("device", ""),
        "scenario": report.get("scenario", ""),
        "batch_size": report.get("batch_size"),
        "workers": settings.get("workers", 1),
        "validity": (perf.get("validity") or {}).get("result", ""),
        "stability": (report.get("stability") or {}).get("verdict", "not recorded"),
        "host_busy": load.get("busy"),
        "other_cpu_share": load.get("other_cpu_share"),
        "samples_per_second": perf.get("samples_per_second"),
        "samples_per_second_low": sps.get("low"),
        "samples_per_second_high": sps.get("high"),
        "latency_p50_ms": None if offline else _ms(latency.get("p50")),
        "latency_p90_ms": None if offline else _ms(latency.get("p90")),
        "latency_p99_ms": None if offline else _ms(latency.get("p99")),
        "sut_latency_p99_ms": None if offline else p99.get("estimate"),
        "sut_latency_p99_low_ms": None if offline else p99.get("low"),
        "sut_latency_p99_high_ms": None if offline else p99.get("high"),
        "interval_reason": OFFLINE_LATENCY_NOTE if offline else "; ".join(reasons),
    }


def setting_columns(reports: Sequence[dict[str, Any]]) -> list[str]:
    """``setting.<path>`` for each differing setting without a column of its own."""
    return [SETTING_PREFIX + p for p in differing(reports) if p not in _COLUMN_OF]


def rows_of(reports: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each run's row with the settings that set it apart (``setting.<path>`` columns)."""
    columns = setting_columns(reports)
    rows = []
    for report in reports:
        leaves = settings_of(report)
        row = row_of(report)
        for column in columns:
            row[column] = leaves.get(column.removeprefix(SETTING_PREFIX))
        rows.append(row)
    return rows


def labels_of(reports: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]]) -> list[str]:
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


def write_csv(reports: Sequence[dict[str, Any]], path: Path) -> int:
    columns = [*CSV_COLUMNS, *setting_columns(reports)]
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for row in rows_of(reports):
            writer.writerow({k: "" if v is None else _csv_value(v) for k, v in row.items()})
    return len(reports)


def _csv_value(value: Any) -> Any:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else value
