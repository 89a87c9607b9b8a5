"""A database already at the newest revision is left alone without Alembic; anything else
still goes through Alembic's upgrade."""

from __future__ import annotations

import json
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


def test_an_older_database_is_upgraded_and_only_then_runs_alembic(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    upgrade_engine(engine, "0016")
    assert stored_revision(engine) == "0016"
    calls: list[str] = []
    real_upgrade = command.upgrade
    monkeypatch.setattr(
        command, "upgrade", lambda config, rev: (calls.append(rev), real_upgrade(config, rev))
    )
    upgrade_engine(engine)
    assert stored_revision(engine) == HEAD_REVISION
    upgrade_engine(engine)
    assert calls == ["head"], "at head, the second call read the version row and stopped"


def test_a_process_at_head_does_not_import_alembic_and_maps_every_table(
    engine: Engine,
) -> None:
    upgrade_engine(engine)
    url = engine.url.render_as_string(hide_password=False)
    # get_engine as a worker calls it, in a process that imported no model yet.
    code = (
        "import json, sys\n"
        "from sqlalchemy import inspect\n"
        "from shared.db.base import Base\n"
        "from shared.db.session import get_engine\n"
        f"engine = get_engine({url!r})\n"
        "print(json.dumps({'alembic': 'alembic' in sys.modules,\n"
        "    'mapped': sorted(Base.metadata.tables),\n"
        "    'stored': sorted(inspect(engine).get_table_names())}))\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    seen = json.loads(ran.stdout)
    assert seen["alembic"] is False
    assert seen["mapped"] == [t for t in seen["stored"] if t != "alembic_version"]
