"""The comparison table of a fan-out: one row per agent, figures beside their verdicts."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich.markup import escape
from rich.table import Table

from services.cli.render import figure
from shared.db.states import FINAL_STATE_NAMES

FINAL = FINAL_STATE_NAMES


def _hardware(row: dict[str, Any]) -> str:
    cpu = row["cpuModel"] or "unknown CPU"
    parts = [f"{cpu} ({row['arch'] or '?'}, {row['logicalCores'] or '?'} cores)"]
    if row["memoryGib"]:
        parts.append(f"{row['memoryGib']:.0f} GiB")
    if row["gpus"]:
        parts.append(
            ", ".join(row["gpus"]) + (f" (driver {row['gpuDriver']})" if row["gpuDriver"] else "")
        )
    return "; ".join(parts)


def _verdict(row: dict[str, Any]) -> str:
    if row["state"] != "SUCCEEDED":
        return f"[red]{row['state']}[/]: {escape(row['reason'])}" if row["reason"] else row["state"]
    validity = "[green]VALID[/]" if row["validity"] == "VALID" else f"[red]{row['validity']}[/]"
    stable = row["stability"]
    text = f"{validity} " + (
        f"[green]{stable}[/]" if stable == "STABLE" else f"[yellow]{stable}[/]"
    )
    if row.get("overlapped"):
        text += " [bold red]overlapped another measurement on its host[/]"
    if row.get("hostBusy"):
        text += " [bold red]host busy[/]"
    return text


def comparison_table(comparison: dict[str, Any]) -> Table:
    """Rows in the order the agents were matched; the fastest is not reordered to the top,
    so that repeated comparisons line up."""
    table = Table(
        title=f"comparison {comparison['id']}: {comparison['model']}, {comparison['scenario']}",
        title_justify="left",
    )
    for name, justify in (
        ("agent", "left"),
        ("hardware", "left"),
        ("framework", "left"),
        ("threads", "right"),
        ("samples/s", "right"),
        ("p50 ms", "right"),
        ("p90 ms", "right"),
        ("p99 ms", "right"),
        ("verdict", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in comparison["rows"]:
        table.add_row(
            row["agentId"] or row["hostname"],
            _hardware(row),
            f"{row['framework']} {row['frameworkVersion']} on {row['device']}",
            str(row["threads"]) if row["threads"] else "default",
            figure(row["samplesPerSecond"], ".1f"),
            figure(row["latencyP50Ms"]),
            figure(row["latencyP90Ms"]),
            figure(row["latencyP99Ms"]),
            _verdict(row),
        )
    return table


def wait_for_comparison(
    fetch: Callable[[], dict[str, Any]], *, poll_s: float = 0.5, timeout_s: float | None = None
) -> dict[str, Any]:
    """Poll until every evaluation of the fan-out has ended (or the timeout passes)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        comparison = fetch()
        if comparison["done"] or (deadline is not None and time.monotonic() > deadline):
            return comparison
        time.sleep(poll_s)
