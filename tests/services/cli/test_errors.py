"""One-line error messages: a message's own quotes are kept; a KeyError's are not."""

from __future__ import annotations

import pytest
import typer

from services.cli.errors import message_of, user_errors
from services.cli.remote import RemoteError


def test_a_message_ending_in_a_quoted_name_keeps_its_quote(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(typer.Exit), user_errors():
        raise RemoteError("NotFound: id: no evaluation 'abc'")
    assert "no evaluation 'abc'" in capsys.readouterr().err


def test_a_key_error_reads_as_its_key() -> None:
    assert message_of(KeyError("no such model")) == "no such model"
    assert message_of(ValueError("'quoted' at both ends'")) == "'quoted' at both ends'"
