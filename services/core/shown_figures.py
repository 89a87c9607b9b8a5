"""The one rule for what a view may show of a run: a figure with its verdicts and its
interval, or nothing.

Every view (CLI ``results``/``submit``/``compare``, the HTML/CSV report, GraphQL's
``Run.shownFigures`` and the web pages that read it) asks ``shown_figures`` rather than
reading the report's figures itself, so none can show a number without what qualifies it:

- its verdicts: LoadGen's validity, the stability verdict, and whether the host was busy
  (others' CPU share, or another measurement overlapping it) with how busy;
- its 95 % interval, or why there is none (``interval_note``);
- never an Offline latency: Offline issues every sample at t=0, so a "latency" there is the
  sample's place in the queue, not a property of the system. Those figures do not come out.

A figure LoadGen did not give (NaN, an accuracy run's empty performance) does not come out
either. A workload's outcome (bricks, training) has no LoadGen figures: its own view says it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from services.core.figures import FIGURES, figures_of
from services.core.stored_report import LoadGenReport, StoredReport, load_report

OFFLINE_LATENCY_NOTE = "Offline: latencies are queue positions, not shown"
NO_INTERVALS_NOTE = "no intervals recorded (run stored before them)"
# name -> the short label views print beside the value.
LABELS = {
    "samples_per_second": "samples/s",
    "latency_mean": "mean",
    "latency_p50": "p50",
    "latency_p90": "p90",
    "latency_p99": "p99",
}


@dataclass(frozen=True)
class HostVerdict:
    """Whether the run shared its machine, and how much: what BUSY stands for."""

    busy: bool | None  # None: not recorded (an older run, or nothing could be measured)
    note: str  # "others used 1.10 CPU-s per s (55% of 2 CPUs) during the run", ...
    other_cpu_share: float | None = None


@dataclass(frozen=True)
class ShownFigure:
    name: str  # a FIGURES name: samples_per_second, latency_p90, ...
    label: str  # samples/s, p90, ...
    value: float
    unit: str
    low: float | None  # the 95 % interval; both None when there is none (interval_note)
    high: float | None
    interval_note: str  # why there is no interval, or what the given one is of
    validity: str  # VALID / INVALID
    stability: str  # STABLE / UNSTABLE / INSUFFICIENT / NOT_APPLICABLE / UNKNOWN
    busy: bool | None
    busy_note: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def is_offline(report: LoadGenReport) -> bool:
    return report.scenario.lower() == "offline"


def host_verdict(host: Mapping[str, Any]) -> HostVerdict:
    """BUSY when other processes took the CPUs the run needed, or another measurement ran
    on the same host at the same time; the note says by how much or with what."""
    load = host.get("load") or {}
    share = load.get("other_cpu_share")
    reason = str(load.get("reason") or "")
    # The sampler's reason starts with its verdict ("busy: ..."): the flag says that.
    notes = [reason.removeprefix("busy: ").removeprefix("quiet: ")] if reason else []
    if host.get("overlapped"):
        others = ", ".join(str(o)[:8] for o in host.get("overlapped_with") or [])
        notes.append(f"overlapped another measurement on this host ({others})")
    busy = host.get("busy")
    if busy is None and "overlapped" not in host:
        return HostVerdict(None, "; ".join(notes) or "host load not recorded", share)
    return HostVerdict(
        bool(busy) or bool(host.get("overlapped")),
        "; ".join(notes),
        None if share is None else float(share),
    )


def _interval(report: LoadGenReport, name: str) -> tuple[float | None, float | None, str]:
    if not report.confidence:
        return None, None, NO_INTERVALS_NOTE
    item = (report.confidence.get("figures") or {}).get(name) or {}
    low, high = item.get("low"), item.get("high")
    if low is None or high is None:
        return None, None, str(item.get("reason") or "no interval recorded for this figure")
    estimate = item.get("estimate")
    units = f"{report.confidence.get('units', '?')} {report.confidence.get('basis', '')}"
    about = f"; its estimate {float(estimate):.4g}" if estimate is not None else ""
    return float(low), float(high), f"95 % bootstrap over {units.strip()}{about}"


def shown_figures(stored: Mapping[str, Any] | StoredReport | None) -> list[ShownFigure]:
    """The figures a view may show of this run, in FIGURES order, each with its verdicts
    and interval; Offline latencies and figures not measured never come out."""
    report = load_report(stored)
    if not isinstance(report, LoadGenReport) or report.performance is None:
        return []
    host = host_verdict(report.host)
    offline = is_offline(report)
    shown = []
    for name, value in figures_of(report).items():
        if math.isnan(value) or (offline and name.startswith("latency")):
            continue
        low, high, note = _interval(report, name)
        shown.append(
            ShownFigure(
                name=name,
                label=LABELS[name],
                value=value,
                unit=FIGURES[name][0],
                low=low,
                high=high,
                interval_note=note,
                validity=report.validity or "UNKNOWN",
                stability=report.stability_verdict or "UNKNOWN",
                busy=host.busy,
                busy_note=host.note,
            )
        )
    return shown


def figure_named(figures: list[ShownFigure], name: str) -> ShownFigure | None:
    return next((f for f in figures if f.name == name), None)


def figure_text(figure: ShownFigure | None, spec: str = ".2f") -> str:
    """'35.90 [34.10, 37.20] BUSY' or '-': a figure as one plain-text cell or phrase."""
    if figure is None:
        return "-"
    text = format(figure.value, spec)
    if figure.low is not None and figure.high is not None:
        text += f" [{format(figure.low, spec)}, {format(figure.high, spec)}]"
    return text + (" BUSY" if figure.busy else "")
