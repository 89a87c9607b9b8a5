"""`benchstack report GROUP --html/--csv` on real embedded runs: one file that opens with no
network (plotly.js inline, the data inline, no script fetched) and a CSV of the figures."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from services.analysis.shared_report import CSV_COLUMNS, plotly_js
from services.cli.main import app
from services.inference.run import RAW_LATENCIES_FILE
from shared.settings import Settings
from shared.storage import make_store

TINY = "tests/fixtures/tiny_cnn.yaml"


def test_a_group_report_is_self_contained_and_its_csv_has_the_columns(
    settings: Settings, tmp_path: Path
) -> None:
    runner = CliRunner()
    bench = runner.invoke(
        app,
        ["bench", TINY, "-f", "null", "-o", "service_time_ms=1", "--samples", "8",
         "--duration", "0.3", "--scenario", "single-stream", "--repeats", "2", "--json"],
        catch_exceptions=False,
    )  # fmt: skip
    assert bench.exit_code == 0, bench.output
    runs = json.loads(bench.stdout)["runs"]
    group = runs[0]["group"]["id"]
    page, table = tmp_path / "report.html", tmp_path / "runs.csv"
    result = runner.invoke(
        app, ["report", group, "--html", str(page), "--csv", str(table)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    text = page.read_text(encoding="utf-8")

    assert plotly_js() in text  # the bundle itself, inline
    assert not re.search(r"<script[^>]*\bsrc\s*=", text)  # nothing is fetched
    assert not re.search(r"<link[^>]*href\s*=\s*[\"']https?:", text)
    # The data points: each run's id, and its slowest stored latency as the CDF's last x.
    store = make_store(settings)
    for run in runs:
        assert run["run_id"][:8] in text
        raw = np.load(io.BytesIO(store.get_bytes(run["log_keys"][RAW_LATENCIES_FILE])))
        assert json.dumps(float(raw.max()) / 1e6) in text
    assert '"type": "bar"' in text  # a group gets throughput bars

    with table.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert [r["run_id"] for r in rows] == [r["run_id"] for r in runs]
    for row, run in zip(rows, runs, strict=True):
        assert float(row["samples_per_second"]) == run["performance"]["samples_per_second"]
        assert float(row["samples_per_second_low"]) <= float(row["samples_per_second_high"])
        assert row["validity"] == run["performance"]["validity"]["result"]


def test_an_unknown_reference_and_no_output_are_refused(settings: Settings, tmp_path: Path) -> None:
    runner = CliRunner()
    unknown = runner.invoke(app, ["report", "nope", "--csv", str(tmp_path / "x.csv")])
    assert (
        unknown.exit_code != 0 and "RUN_OR_GROUP: no run or group matches 'nope'" in unknown.output
    )
    nothing = runner.invoke(app, ["report", "nope"])
    assert nothing.exit_code != 0 and "--html / --csv" in nothing.output
