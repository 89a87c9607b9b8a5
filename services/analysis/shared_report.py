"""Reports to share: one self-contained HTML file (tables and charts) or a CSV of the runs.

The HTML file needs no network to open: plotly.js, as bundled in the ``plotly`` Python
package, is inlined in it; the charts' data is inlined as JSON. A latency CDF comes from
each run's stored per-sample latencies (``sut_latencies_ns.npy``, the SUT's clock), cut to
at most ``CDF_POINTS`` quantiles; a group of runs also gets throughput bars with their 95 %
intervals as error bars.
"""

from __future__ import annotations

import csv
import html
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from services.inference.run import RAW_LATENCIES_FILE
from shared.storage import ObjectNotFound, ObjectStore

CDF_POINTS = 500
# A group's runs read at most (newest first).
MAX_GROUP_RUNS = 500

CSV_COLUMNS = (
    "run_id", "group_kind", "group_id", "model", "framework", "framework_version", "device",
    "scenario", "batch_size", "workers", "validity", "stability", "samples_per_second",
    "samples_per_second_low", "samples_per_second_high", "latency_p50_ms", "latency_p90_ms",
    "latency_p99_ms", "sut_latency_p99_ms", "sut_latency_p99_low_ms",
    "sut_latency_p99_high_ms", "interval_reason",
)  # fmt: skip


def plotly_js() -> str:
    """The plotly.js bundle shipped inside the installed ``plotly`` package."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise FileNotFoundError(f"plotly: no plotly.min.js in {path.parent}; reinstall plotly")
    return path.read_text(encoding="utf-8")


def _ms(value_ns: Any) -> float | None:
    return None if value_ns is None else float(value_ns) / 1e6


def _interval(report: dict[str, Any], name: str) -> dict[str, Any]:
    return ((report.get("confidence") or {}).get("figures") or {}).get(name) or {}


def row_of(report: dict[str, Any]) -> dict[str, Any]:
    """One run as a flat row, in CSV_COLUMNS."""
    perf = report.get("performance") or {}
    latency = (perf.get("latency") or {}).get("percentiles_ns") or {}
    settings = report.get("settings") or {}
    group = report.get("group") or {}
    sps, p99 = _interval(report, "samples_per_second"), _interval(report, "latency_p99")
    reasons = dict.fromkeys(str(i["reason"]) for i in (sps, p99) if i.get("reason"))
    if not report.get("confidence"):
        reasons = {"no intervals recorded (run stored before them)": None}
    return {
        "run_id": report["run_id"],
        "group_kind": group.get("kind", ""),
        "group_id": group.get("id", ""),
        "model": f"{report['model']['name']} {report['model']['version']}",
        "framework": (report.get("framework") or {}).get("name", ""),
        "framework_version": (report.get("framework") or {}).get("version", ""),
        "device": (settings.get("backend_options") or {}).get("device", ""),
        "scenario": report.get("scenario", ""),
        "batch_size": report.get("batch_size"),
        "workers": settings.get("workers", 1),
        "validity": (perf.get("validity") or {}).get("result", ""),
        "stability": (report.get("stability") or {}).get("verdict", "not recorded"),
        "samples_per_second": perf.get("samples_per_second"),
        "samples_per_second_low": sps.get("low"),
        "samples_per_second_high": sps.get("high"),
        "latency_p50_ms": _ms(latency.get("p50")),
        "latency_p90_ms": _ms(latency.get("p90")),
        "latency_p99_ms": _ms(latency.get("p99")),
        "sut_latency_p99_ms": p99.get("estimate"),
        "sut_latency_p99_low_ms": p99.get("low"),
        "sut_latency_p99_high_ms": p99.get("high"),
        "interval_reason": "; ".join(reasons),
    }


def write_csv(reports: Sequence[dict[str, Any]], path: Path) -> int:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for report in reports:
            writer.writerow({k: "" if v is None else v for k, v in row_of(report).items()})
    return len(reports)


def latency_cdf(report: dict[str, Any], store: ObjectStore) -> tuple[list[float], list[float]]:
    """(latency ms, share of samples at or below it) at up to CDF_POINTS quantiles; empty
    when the run's per-sample latencies are not stored."""
    key = (report.get("log_keys") or {}).get(RAW_LATENCIES_FILE)
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


def _cell(value: Any, spec: str = ".3f") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec) if isinstance(value, float) else html.escape(str(value))


def _table(rows: list[dict[str, Any]]) -> str:
    head = (
        "<tr><th>run</th><th>framework</th><th>scenario</th><th>batch</th><th>validity</th>"
        "<th>stability</th><th>samples/s [95 %]</th><th>p50 ms</th><th>p90 ms</th>"
        "<th>p99 ms</th><th>p99 ms SUT [95 %]</th><th>why no interval</th></tr>"
    )
    body = []
    for r in rows:
        sps = _cell(r["samples_per_second"], ".2f")
        if r["samples_per_second_low"] is not None:
            sps += f" [{_cell(r['samples_per_second_low'], '.2f')}, "
            sps += f"{_cell(r['samples_per_second_high'], '.2f')}]"
        p99 = _cell(r["sut_latency_p99_ms"])
        if r["sut_latency_p99_low_ms"] is not None:
            p99 += f" [{_cell(r['sut_latency_p99_low_ms'])}, {_cell(r['sut_latency_p99_high_ms'])}]"
        body.append(
            f"<tr><td>{_cell(r['run_id'])}</td>"
            f"<td>{_cell(r['framework'])} {_cell(r['framework_version'])} on "
            f"{_cell(r['device'])}</td><td>{_cell(r['scenario'])}</td>"
            f"<td>{_cell(r['batch_size'])}</td><td>{_cell(r['validity'])}</td>"
            f"<td>{_cell(r['stability'])}</td><td>{sps}</td>"
            f"<td>{_cell(r['latency_p50_ms'])}</td><td>{_cell(r['latency_p90_ms'])}</td>"
            f"<td>{_cell(r['latency_p99_ms'])}</td><td>{p99}</td>"
            f"<td>{_cell(r['interval_reason'])}</td></tr>"
        )
    return f"<table>{head}{''.join(body)}</table>"


def _script_json(value: Any) -> str:
    """JSON safe inside a <script> element: no '</' can end it early."""
    return json.dumps(value).replace("</", "<\\/")


def render_html(title: str, reports: Sequence[dict[str, Any]], store: ObjectStore) -> str:
    rows = [row_of(r) for r in reports]
    cdf = []
    for report in reports:
        xs, ys = latency_cdf(report, store)
        if xs:
            cdf.append({"x": xs, "y": ys, "type": "scatter", "mode": "lines",
                        "name": str(report["run_id"])[:8]})  # fmt: skip
    charts = [
        {
            "id": "cdf",
            "data": cdf,
            "layout": {
                "title": {"text": "latency CDF (SUT clock, per sample)"},
                "xaxis": {"title": {"text": "latency ms"}},
                "yaxis": {"title": {"text": "share of samples"}, "range": [0, 1]},
            },
        }
    ]
    if len(reports) > 1:
        values = [r["samples_per_second"] for r in rows]
        plus = [
            None if r["samples_per_second_high"] is None else r["samples_per_second_high"] - v
            for r, v in zip(rows, values, strict=True)
        ]
        minus = [
            None if r["samples_per_second_low"] is None else v - r["samples_per_second_low"]
            for r, v in zip(rows, values, strict=True)
        ]
        charts.append(
            {
                "id": "throughput",
                "data": [
                    {
                        "type": "bar",
                        "x": [str(r["run_id"])[:8] for r in rows],
                        "y": values,
                        "error_y": {
                            "type": "data",
                            "symmetric": False,
                            "array": plus,
                            "arrayminus": minus,
                        },
                        "text": [f"{r['validity']} {r['stability']}" for r in rows],
                    }
                ],
                "layout": {
                    "title": {"text": "throughput with 95 % intervals"},
                    "yaxis": {"title": {"text": "samples/s"}},
                },
            }
        )
    divs = "".join(f'<div id="{c["id"]}" class="chart"></div>' for c in charts)
    missing = "" if cdf else "<p>No per-sample latencies are stored with these runs.</p>"
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
        f"{_table(rows)}{missing}{divs}"
        f"<script>const charts = {_script_json(charts)};\n"
        "for (const c of charts) { Plotly.newPlot(c.id, c.data, c.layout, "
        "{staticPlot: false, displaylogo: false}); }</script>"
        "</body></html>\n"
    )
