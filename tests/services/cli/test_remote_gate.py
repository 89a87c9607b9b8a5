"""`benchstack gate --server`: baseline and current read through the API (exit 0 between two
runs at two threads, 1 when the current ran at one thread), and the current measurement
submitted to the stack as a rerun of the baseline's run and waited for."""

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


def test_gate_reads_both_sides_through_the_api(served: tuple[Api, str]) -> None:
    api, url = served
    token = api.token("ada")
    rows = store_series(api.settings, "ada")
    (_, first), (_, second), (_, last) = rows[0], rows[1], rows[-1]
    remote = ["gate", "--server", url, "--token", token, "--baseline", first, "--json"]

    same = CliRunner().invoke(app, [*remote, "--current", second])
    assert same.exit_code == 0, same.output
    assert json.loads(same.stdout)["baseline_runs"] == [rows[0][0]]

    slower = CliRunner().invoke(app, [*remote, "--current", last])
    assert slower.exit_code == 1, slower.output
    (figure,) = json.loads(slower.stdout)["figures"]
    assert figure["outcome"] == "slower" and figure["slowdown"] > 0.4

    unknown = CliRunner().invoke(app, [*remote, "--current", "no-such-group"])
    assert unknown.exit_code == 3 and "RUN_OR_GROUP" in unknown.output


def test_gate_submits_the_current_measurement_and_waits_for_it(served: tuple[Api, str]) -> None:
    api, url = served
    token = api.token("ada")
    api.add_agent()
    # A catalogue model, which the stack resolves when it resubmits the run's request.
    (_, first) = store_series(api.settings, "ada", "resnet18")[0]
    # Nothing runs the submitted rerun here (the publisher records): the wait runs out,
    # and the gate names the group to gate later.
    result = CliRunner().invoke(
        app, ["gate", "--server", url, "--token", token, "--baseline", first, "--wait", "0"]
    )
    assert result.exit_code == 3, result.output
    assert "has 0 of 1 runs stored after 0 s; gate it later with --current" in result.output
    assert api.publisher.sent, "the rerun was submitted"
