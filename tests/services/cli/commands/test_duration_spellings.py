"""`bench` and `submit` both take --duration and --min-duration for LoadGen's minimum
duration, so a command line moves from one to the other unchanged."""

from __future__ import annotations

import pytest
import typer

from services.cli.main import app


@pytest.mark.parametrize("command", ["bench", "submit"])
def test_both_spellings_name_the_same_option(command: str) -> None:
    found = typer.main.get_group(app).commands[command]
    options = [p for p in found.params if "--duration" in getattr(p, "opts", [])]
    assert len(options) == 1, [p.opts for p in found.params]
    assert "--min-duration" in options[0].opts
