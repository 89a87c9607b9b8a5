"""Rich rendering of reports, shared by bench, show and results."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.table import Table

LATENCY_KEYS = (("min", "min_ns"), ("mean", "mean_ns"), ("p50", "p50"), ("p90", "p90"),
                ("p95", "p95"), ("p97", "p97"), ("p99", "p99"), ("p99.9", "p999"), ("max", "max_ns"))


def _ms(latency: dict[str, Any], key: str) -> str:
    value = latency[key] if key.endswith("_ns") else latency["percentiles_ns"][key]
    return "-" if value is None or math.isnan(value) else f"{value / 1e6:.3f}"


def validity_text(perf: dict[str, Any]) -> str:
    validity = perf["validity"]
    if validity["result"] == "VALID":
        return "[green]VALID[/]"
    return "[bold red]INVALID[/]: " + "; ".join(validity["reasons"])


def report_table(report: dict[str, Any]) -> Table:
    perf = report["performance"]
    fw = report["framework"]
    table = Table(title=f"run {report['run_id']}", show_header=False, title_justify="left")
    table.add_column("figure", style="bold")
    table.add_column("value")
    table.add_row("model", f"{report['model']['name']} {report['model']['version']}")
    framework = f"{fw['name']} {fw.get('version', '')}"
    if fw.get("mode"):
        framework += f" ({fw['mode']})"
    table.add_row("framework", framework + f" on {fw.get('device', 'cpu')}")
    table.add_row("scenario", f"{perf['scenario']} / {perf['mode']}, batch {report['batch_size']}")
    table.add_row("dataset", f"{report['dataset']['name']}, {report['dataset']['samples']} samples")
    table.add_row("validity", validity_text(perf))
    headline = perf["headline"]
    table.add_row("LoadGen headline", f"{headline['name']}: {headline['value']:g}")
    table.add_row("samples/s", f"{perf['samples_per_second']:.2f}")
    table.add_row("QPS", f"{perf['qps']:.2f}")
    table.add_row("queries / samples", f"{perf['query_count']} / {perf['sample_count']}")
    latency = perf["latency"]
    table.add_row(
        "latency ms",
        "  ".join(f"{label} {_ms(latency, key)}" for label, key in LATENCY_KEYS),
    )
    accuracy = report.get("accuracy")
    if accuracy:
        top5 = accuracy.get("top5")
        table.add_row(
            "accuracy",
            f"top-1 {accuracy['top1']:.2f} %" + ("" if top5 is None else f", top-5 {top5:.2f} %"),
        )
    if report.get("failed_samples"):
        table.add_row("[red]failed samples[/]", f"{report['failed_samples']}: {report['errors'][:3]}")
    if report["dataset"].get("failed"):
        table.add_row("[red]undecodable[/]", "; ".join(report["dataset"]["failed"][:5]))
    prep = report["preprocessing"]
    table.add_row(
        "preprocessing",
        "reused cached shard" if prep["reused"] else f"{prep['seconds']:.2f} s",
    )
    if "summary" in (report.get("logs") or {}) or report.get("logs"):
        table.add_row("LoadGen logs", report["logs"].get("mlperf_log_summary.txt", ""))
    return table


def print_report(console: Console, report: dict[str, Any]) -> None:
    console.print(report_table(report))
