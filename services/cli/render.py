"""Rich rendering of reports, shared by bench, show and results."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from services.core.metrics import LatencyStats, PerformanceReport
from services.core.report_section import ReportSection
from services.core.shown_figures import OFFLINE_LATENCY_NOTE, is_offline
from services.core.stored_report import (
    LoadGenReport,
    StoredReport,
    load_loadgen_report,
    load_report,
)
from services.workloads.surfaces import report_section_of

if TYPE_CHECKING:
    from services.inference.loadgen.progress import RunProgress

# Piped output has no window to fit. Rich would assume 80 columns and cut cells to
# "convnext_t…"; a wide virtual page keeps every name whole (tables never pad to it).
PIPED_WIDTH = 400


def output_console(*, stderr: bool = False, highlight: bool = True) -> Console:
    """A console for tables and reports: a terminal's own width, or nothing cut when piped.

    COLUMNS, when set, still wins, for whoever wants piped output at a given width."""
    console = Console(stderr=stderr, highlight=highlight)
    if console.is_terminal or os.environ.get("COLUMNS"):
        return console
    return Console(stderr=stderr, highlight=highlight, width=PIPED_WIDTH)


def loadgen_progress_text(report: RunProgress) -> str:
    """'3/5 s, 120/256 samples': how far a LoadGen phase is towards both end criteria."""
    if report.phase == "warming up":
        return "a few untimed batches"
    parts = []
    if report.min_duration_s:
        # Once the time is served, say so: what remains is LoadGen's query count.
        minimum = report.min_duration_s
        served = report.elapsed_s >= minimum
        parts.append(
            f"{minimum:g} s reached" if served else f"{report.elapsed_s:.0f}/{minimum:g} s"
        )
    if report.min_samples:
        parts.append(f"{report.completed_samples:,}/{report.min_samples:,} samples")
    else:
        parts.append(f"{report.completed_samples:,} samples")
    return ", ".join(parts)


LATENCY_KEYS = (
    ("min", "min_ns"),
    ("mean", "mean_ns"),
    ("p50", "p50"),
    ("p90", "p90"),
    ("p95", "p95"),
    ("p97", "p97"),
    ("p99", "p99"),
    ("p99.9", "p999"),
    ("max", "max_ns"),
)


def _ms(latency: LatencyStats, key: str) -> str:
    value = getattr(latency, key) if key.endswith("_ns") else latency.percentiles_ns.get(key)
    return "-" if value is None or math.isnan(value) else f"{value / 1e6:.3f}"


def validity_text(perf: PerformanceReport) -> str:
    validity = perf.validity
    if validity.result == "VALID":
        return "[green]VALID[/]"
    return "[bold red]INVALID[/]: " + "; ".join(validity.reasons)


def stability_text(stored: Mapping[str, Any] | LoadGenReport) -> str:
    """The stability verdict with its reason; shown wherever a performance figure is."""
    stability = load_loadgen_report(stored).stability
    if not stability:
        return "[yellow]not recorded[/] (run stored before stability verdicts)"
    verdict = stability.verdict
    if verdict == "STABLE":
        spreads = [f"throughput {stability.throughput_spread:.1%}"]
        if stability.latency_spread is not None:
            spreads.append(f"latency {stability.latency_spread:.1%}")
        return f"[green]STABLE[/] (last {stability.judged_windows} windows: {', '.join(spreads)})"
    if verdict == "NOT_APPLICABLE":
        return "n/a: " + "; ".join(stability.reasons)
    colour = "bold red" if verdict == "UNSTABLE" else "yellow"
    return f"[{colour}]{verdict}[/]: " + "; ".join(stability.reasons)


def host_text(host: dict[str, Any]) -> str:
    """How the run shared its machine: busy, overlapped, waited, threads chosen."""
    parts = []
    load = host.get("load") or {}
    if host.get("busy"):  # its reason opens with "busy: ", said once as the badge
        reason = str(load.get("reason", "")).removeprefix("busy: ")
        parts.append(f"[bold red]BUSY[/]: {escape(reason)}")
    elif load.get("reason"):
        parts.append(escape(str(load["reason"])))
    if host.get("overlapped"):
        others = ", ".join(str(o)[:8] for o in host.get("overlapped_with") or [])
        parts.append(f"[bold red]overlapped[/] another measurement on this host ({others})")
    elif "exclusive" in host:
        parts.append("alone on this host" if host["exclusive"] else "not exclusive, no overlap")
    if host.get("waited_for_host_s"):
        parts.append(f"waited {host['waited_for_host_s']:.1f} s for the host")
    if host.get("threads"):
        parts.append(escape(str(host["threads"])))
    return "; ".join(parts)


def verdict_badge(stored: Mapping[str, Any] | LoadGenReport) -> str:
    """Short 'VALID/STABLE' for tables with one row per run."""
    report = load_loadgen_report(stored)
    validity = report.validity
    stability = report.stability_verdict or "?"
    v = f"[green]{validity}[/]" if validity == "VALID" else f"[red]{validity}[/]"
    s = f"[green]{stability}[/]" if stability == "STABLE" else f"[yellow]{stability}[/]"
    return f"{v} {s}"


def report_table(stored: Mapping[str, Any] | StoredReport) -> Table:
    report = load_loadgen_report(stored)
    perf = report.perf
    fw = report.framework
    table = Table(title=f"run {report.run_id}", show_header=False, title_justify="left")
    table.add_column("figure", style="bold")
    table.add_column("value", overflow="fold")  # a path goes on over the next lines, uncut
    table.add_row("model", f"{report.model['name']} {report.model['version']}")
    framework = f"{fw['name']} {fw.get('version', '')}"
    if fw.get("mode"):
        framework += f" ({fw['mode']})"
    table.add_row("framework", framework + f" on {fw.get('device', 'cpu')}")
    table.add_row("scenario", f"{perf.scenario} / {perf.mode}, batch {report.batch_size}")
    table.add_row("dataset", f"{report.dataset['name']}, {report.dataset['samples']} samples")
    group = report.group
    if group:
        role = group.get("role") or group.get("parameter") or group.get("of") or ""
        table.add_row("part of", f"{group['kind']} {group.get('id', '')} {role}".strip())
    if report.mode == "accuracy":
        # AccuracyOnly issues each sample once with no timing rules: LoadGen's performance
        # figures and validity do not apply, so none are shown.
        table.add_row("performance", "n/a: accuracy run (see its linked performance run)")
    else:
        _performance_rows(table, report)
    accuracy = report.accuracy
    if accuracy:
        top5 = accuracy.top5
        table.add_row(
            "accuracy",
            f"top-1 {accuracy.top1:.2f} %"
            + ("" if top5 is None else f", top-5 {top5:.2f} %")
            + f" over {accuracy.sample_count} samples",
        )
        if accuracy.missing_outputs:
            table.add_row(
                "[red]no output[/]", f"{accuracy.missing_outputs} samples, scored as wrong"
            )
    if report.failed_samples:
        table.add_row("[red]failed samples[/]", f"{report.failed_samples}: {report.errors[:3]}")
    if report.dataset.get("failed"):
        table.add_row("[red]undecodable[/]", "; ".join(report.dataset["failed"][:5]))
    for warning in report.warnings:
        table.add_row("[yellow]warning[/]", escape(warning))
    table.add_row("preprocessing", _preprocessing_text(report.preprocessing))
    if report.logs:
        table.add_row("LoadGen logs", report.logs.get("mlperf_log_summary.txt", ""))
    return table


def _preprocessing_text(prep: dict[str, Any]) -> str:
    done = (
        "reused cached shard"
        if prep.get("reused")
        else f"{figure(prep.get('seconds'), '.2f')} s{_preprocess_rate(prep)}"
        if prep.get("seconds") is not None
        else f"{len(prep.get('shards') or [])} shards by the preprocess workers"
    )
    # Runs stored before the mode was recorded name none.
    mode = f"{prep['fidelity']}, " if prep.get("fidelity") else ""
    if prep.get("decoder") not in (None, "cpu"):
        mode += f"decoded by {prep['decoder']}, "
    return mode + done


def _preprocess_rate(prep: dict[str, Any]) -> str:
    """' (N images/s, P processes)' for a run that recorded both; runs stored before
    these were recorded, or whose time is zero, get nothing."""
    samples, processes, seconds = prep.get("samples"), prep.get("processes"), prep.get("seconds")
    if not samples or not processes or not seconds:
        return ""
    noun = "process" if processes == 1 else "processes"
    return f" ({samples / seconds:,.0f} images/s, {processes} {noun})"


def _performance_rows(table: Table, report: LoadGenReport) -> None:
    """Every figure comes after its validity and stability, never alone."""
    perf = report.perf
    table.add_row("validity", validity_text(perf))
    for hint in report.hints:
        table.add_row("[yellow]likely cause[/]", escape(hint))
    table.add_row("stability", stability_text(report))
    host = host_text(report.host)
    if host:
        table.add_row("host", host)
    headline = perf.headline
    table.add_row("LoadGen headline", f"{headline.name}: {figure(headline.value, 'g')}")
    derived = " (derived: not in LoadGen's summary)" if "samples_per_second" in perf.derived else ""
    table.add_row(
        "samples/s",
        figure(perf.samples_per_second, ".2f")
        + interval_text(report.confidence, "samples_per_second", ".2f")
        + derived,
    )
    # Offline has no QPS of its own in LoadGen's summary: stored as null, shown as "-".
    table.add_row("QPS", figure(perf.qps, ".2f"))
    table.add_row("queries / samples", f"{perf.query_count} / {perf.sample_count}")
    latency = perf.latency
    # The one rule (services/core/shown_figures.py): an Offline latency is no figure.
    table.add_row(
        "latency ms",
        OFFLINE_LATENCY_NOTE
        if is_offline(report)
        else "  ".join(f"{label} {_ms(latency, key)}" for label, key in LATENCY_KEYS),
    )
    # The bootstrap reads the SUT's own clock (sut_latencies_ns.npy): its latencies leave out
    # LoadGen's overhead, so each interval sits beside its own estimate.
    table.add_row("95 % intervals (SUT clock)", confidence_text(report.confidence))


CONFIDENCE_LABELS = (
    ("samples_per_second", "samples/s", ".2f"),
    ("latency_mean", "mean ms", ".3f"),
    ("latency_p50", "p50 ms", ".3f"),
    ("latency_p90", "p90 ms", ".3f"),
    ("latency_p99", "p99 ms", ".3f"),
)


def interval_text(confidence: dict[str, Any] | None, name: str, spec: str = ".3f") -> str:
    """' [low, high]' beside a figure; '' when the run holds no interval for it."""
    item = ((confidence or {}).get("figures") or {}).get(name) or {}
    if item.get("low") is None or item.get("high") is None:
        return ""
    return f" [{format(item['low'], spec)}, {format(item['high'], spec)}]"


def confidence_text(confidence: dict[str, Any] | None) -> str:
    """Every figure's interval, or why it cannot be given; said once per shared reason."""
    if not confidence:
        return "[yellow]not recorded[/] (run stored before confidence intervals)"
    given: list[str] = []
    missing: dict[str, list[str]] = {}
    for name, label, spec in CONFIDENCE_LABELS:
        item = (confidence.get("figures") or {}).get(name) or {}
        if item.get("low") is not None and item.get("high") is not None:
            given.append(
                f"{label} {figure(item.get('estimate'), spec)} "
                f"[{format(item['low'], spec)}, {format(item['high'], spec)}]"
            )
        else:
            missing.setdefault(str(item.get("reason") or "not computed"), []).append(label)
    parts = ["  ".join(given)] if given else []
    parts += [f"[yellow]none for {', '.join(v)}[/]: {escape(k)}" for k, v in missing.items()]
    units = f"over {confidence['units']} {confidence['basis']}" if confidence.get("units") else ""
    return "; ".join(parts) + (f" ({units})" if units and given else "")


def figure(value: float | None, spec: str = ".3f") -> str:
    """A figure LoadGen did not produce is NaN in memory and null once stored."""
    if value is None or math.isnan(value):
        return "-"
    return format(value, spec)


def print_report(console: Console, report: Mapping[str, Any] | StoredReport) -> None:
    """A run's table: its workload's report section where it declares one, else LoadGen's."""
    section = report_section_of(report)
    if section is None:
        console.print(report_table(report))
        return
    console.print(section_table(section, load_report(report).run_id))


def section_table(section: ReportSection, run_id: str) -> Table:
    """A workload's report section as the CLI shows one run: its rows, label and text."""
    title = f"run {run_id}: {section.title}"
    # As wide as its title at least: rich would wrap the title to the rows' width.
    table = Table(title=title, show_header=False, title_justify="left", min_width=len(title))
    table.add_column("figure", style="bold")
    table.add_column("value", overflow="fold")
    for label, text in section.rows:
        table.add_row(escape(label), escape(text))
    return table
