"""A report to share: one self-contained HTML file of a run or a group (the CSV is
``report_rows.write_csv``).

The HTML file needs no network to open: plotly.js, as bundled in the ``plotly`` Python
package, is inlined in it; the charts' data is inlined as JSON. Each row names its agent,
machine and threads and every setting that differs in the group (``report_rows``). A
latency CDF comes from each run's per-sample latencies on the SUT's clock, cut to at most
``CDF_POINTS`` quantiles, for every run but Offline ones (their latencies are queue
positions). A group also gets throughput and p99 bars with their 95 % intervals as error
bars, and a sweep or find-peak its curve: the figure against the swept value.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from services.analysis.report_rows import (
    OFFLINE_LATENCY_NOTE,
    SETTING_PREFIX,
    Stored,
    is_offline,
    labels_of,
    rows_of,
    setting_columns,
)
from services.core.campaigns.curves import curve_point
from services.core.stored_report import load_loadgen_report
from services.inference.run import RAW_LATENCIES_FILE
from services.workloads.surfaces import report_section_of
from shared.storage import ObjectNotFound, ObjectStore

CDF_POINTS = 500
# A group's runs read at most (newest first).
MAX_GROUP_RUNS = 500


def plotly_js() -> str:
    """The plotly.js bundle shipped inside the installed ``plotly`` package."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise FileNotFoundError(f"plotly: no plotly.min.js in {path.parent}; reinstall plotly")
    return path.read_text(encoding="utf-8")


def latency_cdf(stored: Stored, store: ObjectStore) -> tuple[list[float], list[float]]:
    """(latency ms, share of samples at or below it) at up to CDF_POINTS quantiles; empty
    when the run's per-sample latencies are not stored."""
    key = load_loadgen_report(stored).log_keys.get(RAW_LATENCIES_FILE)
    if not key:
        return [], []
    try:
        import io

        raw = np.load(io.BytesIO(store.get_bytes(key)), allow_pickle=False)
    except ObjectNotFound:
        return [], []
    if raw.size == 0:
        return [], []
    ordered = np.sort(raw.astype(np.float64)) / 1e6
    shares = np.linspace(0.0, 1.0, min(CDF_POINTS, ordered.size))
    index = np.minimum((shares * ordered.size).astype(np.int64), ordered.size - 1)
    return [float(v) for v in ordered[index]], [float((i + 1) / ordered.size) for i in index]


CdfOf = Callable[[Stored], tuple[list[float], list[float]]]


def _cell(value: Any, spec: str = ".3f") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return format(value, spec) if isinstance(value, float) else html.escape(str(value))


def _with_interval(value: Any, low: Any, high: Any, spec: str) -> str:
    text = _cell(value, spec)
    if low is not None and high is not None:
        text += f" [{_cell(low, spec)}, {_cell(high, spec)}]"
    return text


def _table(rows: list[dict[str, Any]], labels: list[str], columns: list[str]) -> str:
    settings_heads = "".join(
        f"<th>{html.escape(c.removeprefix(SETTING_PREFIX))}</th>" for c in columns
    )
    head = (
        "<tr><th>row</th><th>agent</th><th>machine</th><th>threads</th>"
        f"{settings_heads}<th>framework</th><th>scenario</th><th>batch</th>"
        "<th>validity</th><th>stability</th><th>host busy (others' CPU share)</th>"
        "<th>samples/s [95 %]</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th>"
        "<th>p99 ms SUT [95 %]</th><th>why no interval</th><th>run</th></tr>"
    )
    body = []
    for r, label in zip(rows, labels, strict=True):
        settings_cells = "".join(f"<td>{_cell(r[c])}</td>" for c in columns)
        share = r["other_cpu_share"]
        # BUSY in the words every view uses for it (services/core/shown_figures.py).
        busy = {True: "<strong>BUSY</strong>", False: "no"}.get(r["host_busy"], "-")
        load = f"{busy} ({_cell(share, '.0%')})" if share is not None else busy
        body.append(
            f"<tr><td>{html.escape(label)}</td><td>{_cell(r['agent'])}</td>"
            f"<td>{_cell(r['machine'])}</td><td>{_cell(r['threads'])}</td>{settings_cells}"
            f"<td>{_cell(r['framework'])} {_cell(r['framework_version'])} on "
            f"{_cell(r['device'])}</td><td>{_cell(r['scenario'])}</td>"
            f"<td>{_cell(r['batch_size'])}</td><td>{_cell(r['validity'])}</td>"
            f"<td>{_cell(r['stability'])}</td><td>{load}</td>"
            f"<td>{_with_interval(r['samples_per_second'], r['samples_per_second_low'], r['samples_per_second_high'], '.2f')}</td>"  # noqa: E501
            f"<td>{_cell(r['latency_p50_ms'])}</td><td>{_cell(r['latency_p90_ms'])}</td>"
            f"<td>{_cell(r['latency_p99_ms'])}</td>"
            f"<td>{_with_interval(r['sut_latency_p99_ms'], r['sut_latency_p99_low_ms'], r['sut_latency_p99_high_ms'], '.3f')}</td>"  # noqa: E501
            f"<td>{_cell(r['interval_reason'])}</td><td>{_cell(r['run_id'])}</td></tr>"
        )
    return f"<table>{head}{''.join(body)}</table>"


def _script_json(value: Any) -> str:
    """JSON safe inside a <script> element: no '</' can end it early."""
    return json.dumps(value).replace("</", "<\\/")


def _error_bars(values: list[Any], lows: list[Any], highs: list[Any]) -> dict[str, Any]:
    """Plotly's asymmetric error bars from [low, high] intervals (null where none)."""
    plus = [None if v is None or h is None else h - v for v, h in zip(values, highs, strict=True)]
    minus = [
        None if v is None or lo is None else v - lo for v, lo in zip(values, lows, strict=True)
    ]
    return {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus}


Figure = tuple[Any, Any, Any]  # (value, low, high); low and high None without an interval


def throughput_of(row: dict[str, Any]) -> Figure:
    return row["samples_per_second"], row["samples_per_second_low"], row["samples_per_second_high"]


def p99_of(row: dict[str, Any]) -> Figure:
    """The p99 on the SUT's clock with its interval; where no interval could be given, the
    measured p99 alone (a bar without an error bar, the table says why)."""
    if row["sut_latency_p99_ms"] is not None:
        return (
            row["sut_latency_p99_ms"],
            row["sut_latency_p99_low_ms"],
            row["sut_latency_p99_high_ms"],
        )
    return row["latency_p99_ms"], None, None


def _bars(
    chart_id: str, title: str, axis: str, labels: list[str], figures: list[tuple[Any, Any, Any]]
) -> dict[str, Any]:
    values = [f[0] for f in figures]
    return {
        "id": chart_id,
        "data": [
            {
                "type": "bar",
                "x": labels,
                "y": values,
                "error_y": _error_bars(values, [f[1] for f in figures], [f[2] for f in figures]),
            }
        ],
        "layout": {"title": {"text": title}, "yaxis": {"title": {"text": axis}}},
    }


def curve_x(stored: Stored) -> tuple[str, float] | None:
    """(what was varied, its value) for a member of a group kind that declares it (a sweep
    point, a find-peak probe: services/core/campaigns/curves.py); else None."""
    return curve_point(load_loadgen_report(stored))


def _curve(reports: Sequence[Stored], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A sweep's or find-peak's figures against the value it varied, with their intervals."""
    points = [(curve_x(rep), row) for rep, row in zip(reports, rows, strict=True)]
    kept = sorted(((x, row) for x, row in points if x is not None), key=lambda p: p[0][1])
    if len(kept) < 2 or len({x[0] for x, _ in kept}) != 1:
        return []
    name = kept[0][0][0]
    xs = [x[1] for x, _ in kept]
    charts = []
    figures = (
        ("samples_per_second", throughput_of, "samples/s", "throughput"),
        ("p99_ms", p99_of, "p99 ms", "p99 latency"),
    )
    for key, figure_of, axis, what in figures:
        values = [figure_of(row) for _, row in kept]
        ys = [v[0] for v in values]
        if all(y is None for y in ys):
            continue
        lows, highs = [v[1] for v in values], [v[2] for v in values]
        charts.append(
            {
                "id": f"curve-{key}",
                "data": [
                    {
                        "type": "scatter",
                        "mode": "lines+markers",
                        "x": xs,
                        "y": ys,
                        "error_y": _error_bars(ys, lows, highs),
                        "text": [f"{row['validity']} {row['stability']}" for _, row in kept],
                    }
                ],
                "layout": {
                    "title": {"text": f"{what} against {name}, with 95 % intervals"},
                    "xaxis": {"title": {"text": name}},
                    "yaxis": {"title": {"text": axis}},
                },
            }
        )
    return charts


def _sections(reports: Sequence[Stored], labels: list[str]) -> str:
    """Each run's workload report section (Workload.report_section), under its row's label."""
    parts = []
    for report, label in zip(reports, labels, strict=True):
        section = report_section_of(report)
        if section is None:
            continue
        rows = "".join(
            f"<tr><th>{html.escape(name)}</th><td>{html.escape(text)}</td></tr>"
            for name, text in section.rows
        )
        parts.append(
            f'<section class="workload-section"><h2>{html.escape(label)}: '
            f"{html.escape(section.title)}</h2><table>{rows}</table></section>"
        )
    return "".join(parts)


def render_html(title: str, reports: Sequence[Stored], cdf_of: CdfOf) -> str:
    """The page; ``cdf_of(report)`` gives a run's latency CDF points (empty when none)."""
    rows = rows_of(reports)
    columns = setting_columns(reports)
    labels = labels_of(reports, rows)
    cdf = []
    for report, label in zip(reports, labels, strict=True):
        xs, ys = ([], []) if is_offline(report) else cdf_of(report)
        if xs:
            cdf.append({"x": xs, "y": ys, "type": "scatter", "mode": "lines", "name": label})
    charts: list[dict[str, Any]] = []
    if cdf:
        charts.append(
            {
                "id": "cdf",
                "data": cdf,
                "layout": {
                    "title": {"text": "latency CDF (SUT clock, per sample)"},
                    "xaxis": {"title": {"text": "latency ms"}},
                    "yaxis": {"title": {"text": "share of samples"}, "range": [0, 1]},
                },
            }
        )
    if len(reports) > 1:
        charts.append(
            _bars(
                "throughput",
                "throughput with 95 % intervals",
                "samples/s",
                labels,
                [throughput_of(r) for r in rows],
            )
        )
        timed = [
            (label, r) for label, r in zip(labels, rows, strict=True) if p99_of(r)[0] is not None
        ]
        if len(timed) > 1:
            charts.append(
                _bars(
                    "p99",
                    "p99 latency with 95 % intervals (SUT clock; a bar without one: see the table)",
                    "ms",
                    [label for label, _ in timed],
                    [p99_of(r) for _, r in timed],
                )
            )
    charts.extend(_curve(reports, rows))
    notes = []
    if any(is_offline(r) for r in reports):
        notes.append(f"{OFFLINE_LATENCY_NOTE}: no CDF nor p99 bar for Offline runs.")
    if not cdf and not all(is_offline(r) for r in reports):
        notes.append("No per-sample latencies are stored with these runs.")
    if columns:
        names = ", ".join(c.removeprefix(SETTING_PREFIX) for c in columns)
        notes.append(f"Settings that differ between these runs: {names}.")
    notes_html = "".join(f"<p>{html.escape(n)}</p>" for n in notes)
    divs = "".join(f'<div id="{c["id"]}" class="chart"></div>' for c in charts)
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
        ".chart{width:100%;height:420px}</style>"
        f"<script>{plotly_js()}</script></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        "<p>Figures beside their LoadGen validity and stability verdicts; 95 % intervals "
        "from a seeded bootstrap over each run's stability windows (latency on the SUT's "
        "clock).</p>"
        f"{_table(rows, labels, columns)}{_sections(reports, labels)}{notes_html}{divs}"
        f"<script>const charts = {_script_json(charts)};\n"
        "for (const c of charts) { Plotly.newPlot(c.id, c.data, c.layout, "
        "{staticPlot: false, displaylogo: false}); }</script>"
        "</body></html>\n"
    )
