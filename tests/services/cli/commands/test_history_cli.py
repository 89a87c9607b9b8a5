"""`benchstack history` over real stored runs: the null backend's service time doubles in
the middle of the series; the change point is at that run and names the change, and a BUSY
run is shown, marked, and not judged."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from services.cli.main import app
from shared.settings import Settings
from tests.support.null_series import null_run


def test_history_finds_the_change_at_the_run_where_the_service_time_changed(
    settings: Settings,
) -> None:
    ids = [null_run(settings, 5)["run_id"] for _ in range(4)]
    busy = null_run(settings, 5, busy=True)["run_id"]
    ids += [null_run(settings, 10)["run_id"] for _ in range(4)]

    result = CliRunner().invoke(app, ["history", "tiny-cnn", "--json"])
    assert result.exit_code == 0, result.output
    (series,) = json.loads(result.stdout)
    assert series["system"].endswith("null on cpu, Offline")
    assert [p["run_id"] for p in series["points"]] == [*ids[:4], busy, *ids[4:]]
    assert [p["busy"] for p in series["points"]] == [False] * 4 + [True] + [False] * 4
    (change,) = series["change_points"]
    assert change["run_id"] == ids[4]
    assert change["after"] < 0.7 * change["before"] and change["better"] is False
    assert change["changes"] == ["options.service_time_ms: 5 -> 10"]

    table = CliRunner().invoke(
        app, ["history", "tiny-cnn", "--system", "null on cpu"], env={"COLUMNS": "250"}
    )
    assert table.exit_code == 0, table.output
    assert "BUSY (not judged)" in table.stdout
    assert f"change point at {ids[4][:8]}" in table.stdout
    assert "changed: options.service_time_ms: 5 -> 10" in table.stdout


def test_history_of_an_unknown_model_or_figure_says_so(settings: Settings) -> None:
    unknown = CliRunner().invoke(app, ["history", "no-such-model"])
    assert unknown.exit_code == 1 and "no stored performance run" in unknown.output
    figure = CliRunner().invoke(app, ["history", "tiny-cnn", "--figure", "p42"])
    assert figure.exit_code == 1 and "accepted: samples_per_second" in figure.output
