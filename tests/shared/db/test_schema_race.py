"""Two first runs on a fresh data folder migrate the same new SQLite file at once: both
must succeed and leave one schema at head."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from alembic.script import ScriptDirectory
from sqlalchemy import create_engine

from shared.db.migrations import alembic_config, current_revision

# Each child waits for the same instant, then does what a first `benchstack bench` does at
# its first database use: get_engine() migrates the file, then a row is written.
CHILD = """
import sys, time
from sqlalchemy import text
start, url = float(sys.argv[1]), sys.argv[2]
from shared.db.session import get_engine
time.sleep(max(0.0, start - time.time()))
with get_engine(url).begin() as connection:
    connection.execute(text("INSERT INTO users (name, created_at) VALUES (:n, '2026-01-01')"),
                       {"n": sys.argv[3]})
"""
ROUNDS = 6


def _race(url: str) -> list[subprocess.CompletedProcess[str]]:
    start = time.time() + 3.0  # both interpreters have imported SQLAlchemy by then
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(start), url, name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("first", "second")
    ]
    results = []
    for child in children:
        out, err = child.communicate(timeout=120)
        results.append(subprocess.CompletedProcess(child.args, child.returncode, out, err))
    return results


def test_two_first_runs_on_a_fresh_folder_both_migrate(tmp_path: Path) -> None:
    for round_ in range(ROUNDS):
        database = tmp_path / f"round-{round_}" / "benchstack.db"
        url = f"sqlite:///{database}"
        for result in _race(url):
            assert result.returncode == 0, f"round {round_}: {result.stderr[-2000:]}"
        engine = create_engine(url)
        try:
            assert current_revision(engine) == head_revision()
        finally:
            engine.dispose()


def head_revision() -> str | None:
    """The newest migration in the code, whatever its number."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()
