"""`benchstack gate` over real null-backend runs: exit 0 on the same service time, 1 on a
doubled one, 2 when the current run is BUSY; its Markdown and JUnit files; and the current
measurement run here with the baseline's request when none is given."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from services.cli.main import app
from shared.settings import Settings
from tests.support.null_series import null_run

# The host running the tests is shared: runs here spread more than on a quiet CI runner,
# so the bound allowed for "the same settings" is wide enough for that spread; a doubled
# service time (-50 %) is beyond it all the same.
BOUND = "30%"


def _file(tmp_path: Path, name: str, *reports: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(list(reports)))
    return str(path)


def _gate(*args: str) -> Any:
    return CliRunner().invoke(app, ["gate", "--max-slowdown", BOUND, *args])


def test_gate_passes_fails_and_cannot_say(settings: Settings, tmp_path: Path) -> None:
    baseline = null_run(settings, 5)["run_id"]
    same = _file(tmp_path, "same.json", null_run(settings, 5))
    slower = _file(tmp_path, "slower.json", null_run(settings, 10))
    busy = _file(tmp_path, "busy.json", null_run(settings, 5, busy=True))
    markdown, junit = tmp_path / "gate.md", tmp_path / "gate.xml"

    passed = _gate("--baseline", baseline[:8], "--current", same)
    assert passed.exit_code == 0, passed.output
    assert "no slowdown beyond the allowed bound and the noise" in passed.stdout

    failed = _gate(
        "--baseline", baseline, "--current", slower,
        "--markdown", str(markdown), "--junit", str(junit),
    )  # fmt: skip
    assert failed.exit_code == 1, failed.output
    assert "slower, beyond the allowed 30.0%" in failed.stdout
    assert "settings changed: options.service_time_ms: 5 -> 10" in failed.stdout
    text = markdown.read_text()
    assert "| figure | baseline | current | change | noise band | outcome |" in text
    assert "| samples_per_second (samples/s) |" in text
    suite = ET.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("failures")) == ("1", "1")

    cannot = _gate("--baseline", baseline, "--current", busy, "--json")
    assert cannot.exit_code == 2, cannot.output
    verdict = json.loads(cannot.stdout)
    assert verdict["outcome"] == "cannot say"
    assert verdict["reasons"] == ["current: every run was measured on a BUSY host"]
    assert any("quiet host" in remedy for remedy in verdict["remedies"])


def test_gate_measures_the_current_run_with_the_baselines_request(
    settings: Settings, tmp_path: Path
) -> None:
    baseline = null_run(settings, 5)
    result = CliRunner().invoke(
        app, ["gate", "--baseline", _file(tmp_path, "base.json", baseline), "--json"]
    )
    # A verdict either way: whether this host was quiet is not the test's to choose.
    assert result.exit_code in {0, 1, 2}, result.output
    verdict = json.loads(result.stdout)
    (current,) = verdict["current_runs"]
    assert verdict["baseline_runs"] == [baseline["run_id"]] and current != baseline["run_id"]
    shown = CliRunner().invoke(app, ["show", current, "--json"])
    stored = json.loads(shown.stdout)
    assert stored["settings"]["backend_options"]["extra"] == {"service_time_ms": 5}
    assert stored["group"]["kind"] == "rerun"


def test_a_gate_that_cannot_run_exits_3(settings: Settings, tmp_path: Path) -> None:
    missing = CliRunner().invoke(app, ["gate", "--baseline", "no-such-run"])
    assert missing.exit_code == 3 and "no run or group" in missing.output
    unread = CliRunner().invoke(app, ["gate", "--baseline", str(tmp_path / "none.json")])
    assert unread.exit_code == 3 and "No such file" in unread.output


def test_a_group_baseline_is_its_members(settings: Settings, tmp_path: Path) -> None:
    from services.campaigns.rerun import rerun_stored
    from tests.support.null_series import set_busy

    original = null_run(settings, 5)["run_id"]
    members = rerun_stored(original, settings, repeats=2).rerun_runs
    group_id = str(set_busy(settings, members[0], False)["group"]["id"])
    set_busy(settings, members[1], False)
    slower = _file(tmp_path, "slower.json", null_run(settings, 10))
    result = _gate("--baseline", group_id[:8], "--current", slower, "--json")
    assert result.exit_code == 1, result.output
    assert sorted(json.loads(result.stdout)["baseline_runs"]) == sorted(members)
