"""`benchstack history --server`: the API's history query over HTTP, printed as the local
history prints it (the change point at the run where threads changed, naming it)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from typer.testing import CliRunner

from services.api.app import create_app
from services.cli.main import app
from tests.services.api.conftest import Api, api_with
from tests.support.history_rows import store_series


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Api, str]]:
    """The API over SQLite on a free local port (the CLI speaks HTTP)."""
    with api_with(tmp_path) as api:
        web = create_app(api.settings, publish=api.publisher)
        server = uvicorn.Server(uvicorn.Config(web, host="127.0.0.1", port=0, log_level="warning"))
        thread = threading.Thread(target=server.run, name="history-test-api", daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the API did not start"
            time.sleep(0.05)
        yield api, f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
        server.should_exit = True
        thread.join(timeout=10)


def test_history_through_the_api(served: tuple[Api, str]) -> None:
    api, url = served
    token = api.token("ada")
    ids = store_series(api.settings, "ada")
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
