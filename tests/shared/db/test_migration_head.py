"""A database already at the newest revision is left alone without Alembic; anything else
still goes through Alembic's upgrade."""

from __future__ import annotations

import subprocess
import sys

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from shared.db.migrations import (
    HEAD_REVISION,
    alembic_config,
    current_revision,
    stored_revision,
    upgrade_engine,
)


def test_head_revision_is_the_newest_script() -> None:
    # A new migration must move HEAD_REVISION, or every process would stop one short.
    assert ScriptDirectory.from_config(alembic_config()).get_heads() == [HEAD_REVISION]


def test_a_fresh_database_is_migrated_to_head(engine: Engine) -> None:
    assert stored_revision(engine) is None
    upgrade_engine(engine)
    assert stored_revision(engine) == current_revision(engine) == HEAD_REVISION


def test_an_older_database_is_still_upgraded(engine: Engine) -> None:
    upgrade_engine(engine, "0016")
    assert stored_revision(engine) == "0016"
    upgrade_engine(engine)
    assert stored_revision(engine) == HEAD_REVISION


def test_only_a_database_short_of_head_runs_alembic(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    upgrade_engine(engine, "0016")
    calls: list[str] = []
    real_upgrade = command.upgrade
    monkeypatch.setattr(
        command, "upgrade", lambda config, rev: (calls.append(rev), real_upgrade(config, rev))
    )
    upgrade_engine(engine)
    upgrade_engine(engine)
    assert calls == ["head"], "at head, the second call read the version row and stopped"


def test_a_process_at_head_does_not_import_alembic(engine: Engine) -> None:
    upgrade_engine(engine)
    code = (
        "import sys\n"
        "from sqlalchemy import create_engine\n"
        "from shared.db.migrations import upgrade_engine\n"
        f"upgrade_engine(create_engine({engine.url.render_as_string(hide_password=False)!r}))\n"
        "print('alembic' in sys.modules)\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert ran.stdout.strip() == "False", ran.stderr
