"""`benchstack report GROUP --html/--csv` on real embedded runs: one file that opens with no
network (plotly.js inline, the data inline, no script fetched) and a CSV of the figures."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from services.analysis.report_rows import CSV_COLUMNS
from services.analysis.shared_report import plotly_js
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


def _sweep(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(
        app,
        ["sweep", TINY, "-f", "null", "-o", "service_time_ms=1", "--samples", "8",
         "--duration", "0.3", "--threads", "1", "--json", *args],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    curve: dict[str, object] = json.loads(result.stdout)
    return curve


def _charts(text: str) -> dict[str, dict[str, object]]:
    found = re.search(r"const charts = (\[.*?\]);\n", text)
    assert found, "the page holds its charts as JSON"
    return {c["id"]: c for c in json.loads(found.group(1).replace("<\\/", "</"))}


def test_a_sweep_report_names_what_differs_and_draws_its_curve_with_intervals(
    tmp_path: Path, data_dir: Path
) -> None:
    curve = _sweep("--scenario", "server", "--target-qps", "100,200")
    page, table = tmp_path / "sweep.html", tmp_path / "sweep.csv"
    result = CliRunner().invoke(
        app, ["report", str(curve["id"]), "--html", str(page), "--csv", str(table)]
    )
    assert result.exit_code == 0, result.output
    with table.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    # The swept setting is a column of its own, beside the agent, machine and threads.
    assert "setting.scenario.target_qps" in rows[0]
    assert sorted(float(r["setting.scenario.target_qps"]) for r in rows) == [100.0, 200.0]
    for row in rows:
        assert row["agent"].startswith("embedded on ") and row["machine"].startswith("local:")
        assert int(row["threads"]) >= 0
    charts = _charts(page.read_text(encoding="utf-8"))
    line = charts["curve-samples_per_second"]["data"][0]  # type: ignore[index]
    assert line["x"] == [100.0, 200.0]
    by_qps = {float(r["setting.scenario.target_qps"]): r for r in rows}
    for x, y, plus, minus in zip(
        line["x"], line["y"], line["error_y"]["array"], line["error_y"]["arrayminus"], strict=True
    ):
        row = by_qps[x]
        assert y == float(row["samples_per_second"])
        if row["samples_per_second_high"]:
            assert y + plus == pytest.approx(float(row["samples_per_second_high"]))
            assert y - minus == pytest.approx(float(row["samples_per_second_low"]))
    # Bars are labelled by what differs, not by run ids.
    bars = charts["throughput"]["data"][0]  # type: ignore[index]
    assert sorted(bars["x"]) == ["target_qps=100.0", "target_qps=200.0"]
    assert "curve-p99_ms" in charts and "p99" in charts and "cdf" in charts


def test_offline_runs_show_no_latency_distribution(tmp_path: Path, data_dir: Path) -> None:
    curve = _sweep("--scenario", "offline", "--batch-sizes", "1,2")
    page, table = tmp_path / "offline.html", tmp_path / "offline.csv"
    result = CliRunner().invoke(
        app, ["report", str(curve["id"]), "--html", str(page), "--csv", str(table)]
    )
    assert result.exit_code == 0, result.output
    text = page.read_text(encoding="utf-8")
    charts = _charts(text)
    assert "cdf" not in charts and "p99" not in charts and "curve-p99_ms" not in charts
    assert "Offline: latencies are queue positions" in text
    with table.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["latency_p99_ms"] for r in rows} == {""}
    # The batch size has its own column; the bars' labels name it.
    assert sorted(int(r["batch_size"]) for r in rows) == [1, 2]
    assert not any(name.startswith("setting.") for name in rows[0])
    assert sorted(charts["throughput"]["data"][0]["x"]) == ["batch_size=1", "batch_size=2"]  # type: ignore[index]
    assert charts["curve-samples_per_second"]["data"][0]["x"] == [1.0, 2.0]  # type: ignore[index]
