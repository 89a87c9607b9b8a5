"""`benchstack results` and `submit`'s summary line say each figure as the one rule gives it
(services/core/shown_figures.py): with its interval, BUSY where the host was busy, and no
latency for an Offline run."""

from __future__ import annotations

import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

from services.cli.commands import submit
from services.cli.main import app
from shared.db.migrations import upgrade_head
from shared.db.session import session_scope
from shared.settings import Settings
from tests.support.shown_runs import BUSY_HOST, store_run, stored_report


def stored(settings: Settings) -> tuple[str, str]:
    """A busy SingleStream run and a quiet Offline one, in the embedded database."""
    url = settings.effective_database_url
    upgrade_head(url)
    with session_scope(url) as session:
        busy = store_run(session, stored_report("single_stream", host=BUSY_HOST))
        offline = store_run(session, stored_report("offline"))
    return busy, offline


def test_results_show_busy_beside_each_figure_and_no_offline_latency(settings: Settings) -> None:
    busy, offline = stored(settings)
    result = CliRunner().invoke(app, ["results"], env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    (busy_line,) = [line for line in result.output.splitlines() if busy[:8] in line]
    (offline_line,) = [line for line in result.output.splitlines() if offline[:8] in line]
    assert "35.90 [34.10, 37.20] BUSY" in busy_line
    assert "8.300 [7.900, 8.600] BUSY" in busy_line  # p90 with its interval
    assert "35.90 [34.10, 37.20]" in offline_line and "BUSY" not in offline_line
    assert "8.300" not in offline_line  # Offline: no latency figure


def test_results_json_carries_the_rules_figures(settings: Settings) -> None:
    busy, offline = stored(settings)
    result = CliRunner().invoke(app, ["results", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["run_id"]: r for r in json.loads(result.stdout)}
    assert rows[offline]["p90_ms"] is None
    assert [f["name"] for f in rows[offline]["figures"]] == ["samples_per_second"]
    assert all(f["busy"] and "55% of 2 CPUs" in f["busy_note"] for f in rows[busy]["figures"])


@pytest.mark.parametrize(
    ("scenario", "host", "said", "unsaid"),
    [
        ("single_stream", BUSY_HOST, ["samples/s", "BUSY", "p90 8.300 [7.900, 8.600]"], []),
        ("offline", {}, ["35.90 [34.10, 37.20] samples/s", "queue positions"], ["p90", "BUSY"]),
    ],
)
def test_submits_line_says_the_rules_figures(
    monkeypatch: pytest.MonkeyPatch,
    scenario: str,
    host: dict[str, object],
    said: list[str],
    unsaid: list[str],
) -> None:
    console = Console(record=True, width=300)
    monkeypatch.setattr(submit, "console", console)
    report = stored_report(scenario, host=host)
    run = {
        "id": report["run_id"],
        "samplesPerSecond": 35.9,
        "validity": "VALID",
        "stability": "UNSTABLE",
        "metrics": [{"name": "latency_p90", "value": 8.3, "unit": "ms"}],
        "report": report,
    }
    submit._print_runs({"runs": [run], "preprocessReused": False})
    line = console.export_text().splitlines()[0]
    assert all(text in line for text in said), line
    assert not any(text in line for text in unsaid), line


def test_show_gives_an_offline_run_no_latency_figure(settings: Settings) -> None:
    busy, offline = stored(settings)
    shown = CliRunner().invoke(app, ["show", offline[:8]], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "latencies are queue positions" in shown.output and "p90 8.300" not in shown.output
    timed = CliRunner().invoke(app, ["show", busy[:8]], env={"COLUMNS": "200"})
    assert timed.exit_code == 0, timed.output
    assert "p90 8.300" in timed.output and "BUSY" in timed.output
