"""`benchstack history --server`: the API's history query over HTTP, printed as the local
history prints it (the change point at the run where threads changed, naming it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from services.cli.main import app
from tests.services.api.conftest import Api
from tests.support.history_rows import store_series
from tests.support.served_api import served_api


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Api, str]]:
    with served_api(tmp_path) as found:
        yield found


def test_history_through_the_api(served: tuple[Api, str]) -> None:
    api, url = served
    token = api.token("ada")
    ids = [run for run, _ in store_series(api.settings, "ada")]
    remote = ["history", "tiny-cnn", "--server", url, "--token", token]
    found = CliRunner().invoke(app, [*remote, "--json"])
    assert found.exit_code == 0, found.output
    (series,) = json.loads(found.stdout)
    assert [p["run_id"] for p in series["points"]] == ids
    (change,) = series["change_points"]
    assert change["run_id"] == ids[6] and change["changes"] == ["threads: 2 -> 1"]

    table = CliRunner().invoke(app, remote, env={"COLUMNS": "250"})
    assert table.exit_code == 0, table.output
    assert f"change point at {ids[6][:8]}" in table.stdout
    assert "changed: threads: 2 -> 1" in table.stdout

    refused = CliRunner().invoke(app, [*remote, "--figure", "p42"])
    assert refused.exit_code == 1 and "is not a figure" in refused.output
