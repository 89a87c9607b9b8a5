"""The comparison table of a fan-out: one row per agent, figures beside their verdicts."""

from __future__ import annotations

import csv
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from services.cli.render import PIPED_WIDTH, figure
from services.cli.tables import Column, fitted_table
from services.core.confidence import Interval, differ
from services.core.workload import DEFAULT_WORKLOAD
from services.workloads import workloads
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


def _is_training(row: dict[str, Any]) -> bool:
    """A row of a workload that times its own steps (Workload.judged_by_loadgen False: images/s,
    no latencies, the host's state as its verdict); a name this CLI does not know reads as
    LoadGen's. A row with figures of its own (``workloadFigures``: generative's token
    figures) keeps LoadGen's validity as its verdict."""
    workload = workloads().get(str(row.get("workload") or DEFAULT_WORKLOAD))
    own = bool(row.get("workloadFigures"))
    return workload is not None and not workload.judged_by_loadgen and not own


def _verdict(row: dict[str, Any]) -> str:
    if row["state"] != "SUCCEEDED":
        return f"[red]{row['state']}[/]: {escape(row['reason'])}" if row["reason"] else row["state"]
    if _is_training(row):
        # Training steps are timed, not judged by LoadGen: the host's state is the verdict.
        text = f"[green]{row['validity']}[/]"
        if row.get("overlapped"):
            text += " [bold red]overlapped another measurement on its host[/]"
        text += " [bold red]BUSY[/]" if row.get("hostBusy") else " host quiet"
        return text
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


def _bracket(row: dict[str, Any], low: str, high: str, spec: str = ".3f") -> str:
    if row.get(low) is None or row.get(high) is None:
        return ""
    return f" [{format(row[low], spec)}, {format(row[high], spec)}]"


def _label(row: dict[str, Any]) -> str:
    return str(row["agentId"] or row["hostname"] or row["evaluationId"])


# (figure, low key, high key) that a verdict is given on; p99 on the SUT's clock.
VERDICT_FIGURES = (
    ("samples/s", "samplesPerSecondLow", "samplesPerSecondHigh", "samplesPerSecond"),
    ("p99 ms (SUT clock)", "latencyP99LowMs", "latencyP99HighMs", "latencyP99Ms"),
)
TRAINING_VERDICT_FIGURES = (
    ("images/s", "samplesPerSecondLow", "samplesPerSecondHigh", "samplesPerSecond"),
)
# At a narrow console the agent (never cut), its figures and verdict stay; what is
# left out goes lowest priority first: p50 and p90, then the framework.
LOADGEN_COLUMNS = (
    Column("agent", priority=100, wrap=False),
    Column("hardware", priority=50, min_width=12),
    Column("framework", priority=40),
    Column("threads", priority=45, wrap=False, justify="right"),
    Column("samples/s", priority=90, min_width=9, justify="right"),
    Column("p50 ms", priority=20, wrap=False, justify="right"),
    Column("p90 ms", priority=25, wrap=False, justify="right"),
    Column("p99 ms", priority=70, min_width=9, justify="right"),
    Column("verdict", priority=95, min_width=12),
)
LATENCY_HEADERS = ("p50 ms", "p90 ms", "p99 ms")
TRAINING_COLUMNS = (
    Column("agent", priority=100, wrap=False),
    Column("hardware", priority=50, min_width=12),
    Column("framework", priority=40),
    Column("settings that differ", priority=60),
    Column("images/s [95 %]", priority=90, min_width=9, justify="right"),
    Column("jitter", priority=30, wrap=False, justify="right"),
    Column("mean step ms", priority=35, min_width=6, justify="right"),
    Column("verdict", priority=95, min_width=12),
)
# Pairs are said for at most this many rows (a fan-out reaches every matching agent).
MAX_PAIRED_ROWS = 10


def _interval(row: dict[str, Any], low: str, high: str, value: str) -> Interval:
    if row["state"] != "SUCCEEDED":
        return Interval(estimate=None, reason=f"{row['state']}: no run")
    if _is_training(row):
        # Measured, not LoadGen-judged: no verdict on a run whose host was not its own.
        if row.get("hostBusy"):
            return Interval(estimate=None, reason="BUSY: other processes kept its host busy")
        if row.get("overlapped"):
            return Interval(estimate=None, reason="another measurement overlapped it")
    elif row["validity"] != "VALID":
        return Interval(estimate=None, reason=f"{row['validity']}: LoadGen did not judge it")
    if row.get(low) is None or row.get(high) is None:
        return Interval(estimate=row.get(value), reason=row.get("intervalReason") or "no interval")
    return Interval(estimate=row.get(value), low=row[low], high=row[high])


def pair_verdicts(comparison: dict[str, Any]) -> list[dict[str, str]]:
    """For each pair of rows and each judged figure: "differ" (the 95 % intervals do not
    overlap), "within their intervals", or "cannot say" and why. A row that is not VALID
    or has no interval gets no verdict. The first ``MAX_PAIRED_ROWS`` rows only."""
    rows = comparison["rows"][:MAX_PAIRED_ROWS]
    found = []
    for i, a in enumerate(rows):
        for b in rows[i + 1 :]:
            # Training runs have images/s and no latencies.
            training = _is_training(a) or _is_training(b)
            figures = TRAINING_VERDICT_FIGURES if training else VERDICT_FIGURES
            if _is_offline(comparison):
                figures = VERDICT_FIGURES[:1]  # Offline latencies are queue positions
            for name, low, high, value in figures:
                verdict, why = differ(
                    _interval(a, low, high, value), _interval(b, low, high, value)
                )
                found.append(
                    {"a": _label(a), "b": _label(b), "figure": name, "verdict": verdict, "why": why}
                )
    return found


def verdict_lines(comparison: dict[str, Any]) -> list[str]:
    lines = []
    for v in pair_verdicts(comparison):
        colour = {"differ": "bold", "within their intervals": "green"}.get(v["verdict"], "yellow")
        lines.append(
            f"{escape(v['a'])} vs {escape(v['b'])}, {v['figure']}: "
            f"[{colour}]{v['verdict']}[/] ({escape(v['why'])})"
        )
    if len(comparison["rows"]) > MAX_PAIRED_ROWS:
        lines.append(f"(pairs of the first {MAX_PAIRED_ROWS} rows only)")
    return lines


CSV_COLUMNS = (
    "group_id", "model", "scenario", "agent", "machine", "hostname", "cpu", "gpus", "framework",
    "framework_version", "device", "threads", "state", "run_id", "validity", "stability",
    "samples_per_second", "samples_per_second_low", "samples_per_second_high",
    "latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "latency_p99_low_ms",
    "latency_p99_high_ms", "interval_reason", "workload", "training_settings",
    "jitter_images_per_second", "mean_step_ms", "workload_settings", "workload_figures",
)  # fmt: skip


def write_comparison_csv(comparison: dict[str, Any], path: Path) -> int:
    """One line per row of the comparison, in CSV_COLUMNS; returns the rows written."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(CSV_COLUMNS)
        for row in comparison["rows"]:
            writer.writerow(
                [
                    comparison["id"], comparison["model"], comparison["scenario"],
                    row["agentId"], row.get("machine") or "", row["hostname"], row["cpuModel"],
                    ";".join(row["gpus"]),
                    row["framework"], row["frameworkVersion"], row["device"], row["threads"],
                    row["state"], row["runId"] or "", row["validity"], row["stability"],
                    _csv(row["samplesPerSecond"]), _csv(row.get("samplesPerSecondLow")),
                    _csv(row.get("samplesPerSecondHigh")), _csv(row["latencyP50Ms"]),
                    _csv(row["latencyP90Ms"]), _csv(row["latencyP99Ms"]),
                    _csv(row.get("latencyP99LowMs")), _csv(row.get("latencyP99HighMs")),
                    row.get("intervalReason") or "", row.get("workload") or "loadgen",
                    ";".join(row.get("trainingSettings") or []),
                    _csv(row.get("jitterImagesPerSecond")), _csv(row.get("meanStepMs")),
                    ";".join(row.get("workloadSettings") or []),
                    ";".join(row.get("workloadFigures") or []),
                ]
            )  # fmt: skip
    return len(comparison["rows"])


def _csv(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def differing_settings(rows: list[dict[str, Any]]) -> list[str]:
    """The training settings ("image_size", ...) whose values are not the same in every row
    that states them, in the order the rows state them."""
    values: dict[str, set[str]] = {}
    for row in rows:
        for pair in _stated(row):
            key, _, value = pair.partition("=")
            values.setdefault(key, set()).add(value)
    return [key for key, seen in values.items() if len(seen) > 1]


def _stated(row: dict[str, Any]) -> list[str]:
    """The "key=value" settings a row states: training's, or another workload's own."""
    return list(row.get("trainingSettings") or row.get("workloadSettings") or [])


def _setting(row: dict[str, Any], keys: list[str]) -> str:
    stated = dict(pair.partition("=")[::2] for pair in _stated(row))
    return ", ".join(f"{key}={stated.get(key, '—')}" for key in keys) or "the same"


def training_table(comparison: dict[str, Any], width: int = PIPED_WIDTH) -> Table:
    """A training fan-out: the settings that differ, images/s with its 95 % interval,
    jitter and the mean step; no LoadGen columns (training runs have no latencies)."""
    rows = comparison["rows"]
    differ_keys = differing_settings(rows)
    cells = [
        [
            row["agentId"] or row["hostname"],
            _hardware(row),
            f"{row['framework']} {row['frameworkVersion']} on {row['device']}",
            _setting(row, differ_keys),
            figure(row["samplesPerSecond"], ".1f")
            + _bracket(row, "samplesPerSecondLow", "samplesPerSecondHigh", ".1f"),
            figure(row.get("jitterImagesPerSecond"), ".2f"),
            figure(row.get("meanStepMs"), ".2f"),
            _verdict(row),
        ]
        for row in rows
    ]
    return fitted_table(
        TRAINING_COLUMNS,
        cells,
        width=width,
        title=f"comparison {comparison['id']}: {comparison['model']}, training",
        title_justify="left",
    )


def workload_table(comparison: dict[str, Any]) -> Table:
    """A fan-out of a workload with figures of its own (Workload.fan_out_figures'
    ``workload_figures``, "label: value [low - high]"): the settings that differ, then
    each of its figures with its 95 % interval, then LoadGen's verdict."""
    rows = comparison["rows"]
    differ_keys = differing_settings(rows)
    labels = [text.partition(": ")[0] for text in rows[0]["workloadFigures"]]
    table = Table(
        title=f"comparison {comparison['id']}: {comparison['model']}, {comparison['scenario']}",
        title_justify="left",
    )
    for name in ("agent", "hardware", "settings that differ", *labels, "verdict"):
        table.add_column(name, justify="right" if name in labels else "left")
    for row in rows:
        shown = dict(text.partition(": ")[::2] for text in row.get("workloadFigures") or [])
        table.add_row(
            row["agentId"] or row["hostname"],
            _hardware(row),
            _setting(row, differ_keys),
            *(escape(shown.get(label, "—")) for label in labels),
            _verdict(row),
        )
    return table


def _is_offline(comparison: dict[str, Any]) -> bool:
    return str(comparison.get("scenario") or "").lower() == "offline"


def comparison_table(comparison: dict[str, Any], width: int = PIPED_WIDTH) -> Table:
    """Rows in the order the agents were matched; the fastest is not reordered to the top,
    so that repeated comparisons line up. ``width``: the console's, which the table fits."""
    if comparison["rows"] and all(row.get("workloadFigures") for row in comparison["rows"]):
        return workload_table(comparison)
    if comparison["rows"] and all(_is_training(row) for row in comparison["rows"]):
        return training_table(comparison, width)
    # Offline issues every sample at once: its latencies are places in a queue, not the
    # system's latency, so an Offline comparison shows none.
    timed = not _is_offline(comparison)
    columns = [c for c in LOADGEN_COLUMNS if timed or c.header not in LATENCY_HEADERS]
    cells = []
    for row in comparison["rows"]:
        latencies = [
            figure(row["latencyP50Ms"]),
            figure(row["latencyP90Ms"]),
            figure(row["latencyP99Ms"]) + _bracket(row, "latencyP99LowMs", "latencyP99HighMs"),
        ]
        cells.append(
            [
                row["agentId"] or row["hostname"],
                _hardware(row),
                f"{row['framework']} {row['frameworkVersion']} on {row['device']}",
                str(row["threads"]) if row["threads"] else "default",
                figure(row["samplesPerSecond"], ".1f")
                + _bracket(row, "samplesPerSecondLow", "samplesPerSecondHigh", ".1f"),
                *(latencies if timed else []),
                _verdict(row),
            ]
        )
    return fitted_table(
        columns,
        cells,
        width=width,
        title=f"comparison {comparison['id']}: {comparison['model']}, {comparison['scenario']}",
        title_justify="left",
        caption=None
        if timed
        else "Offline: no latencies (a sample's latency is its place in the queue)",
    )


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
