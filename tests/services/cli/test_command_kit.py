"""Each workload's declared command is part of `benchstack`, found in the registry, and
reaches what the CLI lends it (services/core/workload.py CommandKit) through the root
app's context; outside that app it says so instead of failing on a missing helper."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from services.cli.main import app
from services.core.workload import entry
from services.workloads import workload_named, workloads


def _names(root: typer.Typer) -> set[str]:
    command = typer.main.get_command(root)
    return set(command.commands)  # type: ignore[attr-defined]


def test_every_declared_command_is_registered_on_the_root_app() -> None:
    declared = [w for w in workloads().values() if w.cli_command]
    assert len(declared) >= 2  # training's `train`, bricks' `bricks`
    for workload in declared:
        alone = typer.Typer()
        entry(str(workload.cli_command))(alone)
        added = set(c.name for c in alone.registered_commands)
        added |= {g.name for g in alone.registered_groups}
        assert added and added <= _names(app), (workload.name, added)


def test_a_declared_command_reports_an_expected_failure_through_the_kit() -> None:
    result = CliRunner().invoke(app, ["train", "digits", "--steps", "0"])
    assert result.exit_code == 1
    assert "--steps: 0 is outside the accepted range" in result.output
    assert "Traceback" not in result.output


def test_a_declared_command_outside_the_root_app_names_what_it_lacks() -> None:
    alone = typer.Typer()
    entry(str(workload_named("training").cli_command))(alone)
    result = CliRunner().invoke(alone, ["digits", "--steps", "0"])
    assert isinstance(result.exception, RuntimeError)
    assert "lends it its CommandKit" in str(result.exception)
