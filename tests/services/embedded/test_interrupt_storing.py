"""Ctrl-C around an embedded run's storing: the run is stored whole (files and row) or not
at all, and the process says which, exit 130, no traceback - in a real subprocess that
sends itself SIGINT at a chosen point (a wrapper patches one function to do it)."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from services.embedded.interrupt import (
    EXIT_INTERRUPTED,
    INTERRUPTED_MESSAGE,
    interrupted_message,
    storing_is_atomic,
)

# Runs `benchstack bench` with ``target`` (module:function) wrapped so that its first call
# sends this process SIGINT, as a person's Ctrl-C would, before it runs.
DRIVER = """
import importlib, os, signal, sys
module_name, name = sys.argv[1].split(":")
module = importlib.import_module(module_name)
original = getattr(module, name)
fired = []
def wrapped(*args, **kwargs):
    if not fired:
        fired.append(True)
        os.kill(os.getpid(), signal.SIGINT)
    return original(*args, **kwargs)
setattr(module, name, wrapped)
sys.argv = ["benchstack", *sys.argv[2:]]
from services.cli.main import app
app()
"""


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as a terminal delivers Ctrl-C


def bench_signalled_at(target: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "BENCHSTACK_DATA_DIR": str(data_dir),
        "BENCHSTACK_HOST_SLOT_DIR": str(data_dir / "host"),
        "COLUMNS": "200",
    }
    env.pop("BENCHSTACK_DATABASE_URL", None)
    env.pop("BENCHSTACK_S3_ENDPOINT", None)
    command = [sys.executable, "-c", DRIVER, target, "bench", "resnet18", "--framework", "null"]
    command += ["-o", "service_time_ms=1", "--duration", "0.2", "--samples", "4"]
    return subprocess.run(
        command,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_default_sigint,
    )


def stored_rows(database: Path) -> list[str]:
    if not database.exists():
        return []
    with sqlite3.connect(database) as connection:
        tables = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if ("runs",) not in tables.fetchall():
            return []
        return [row[0] for row in connection.execute("SELECT id FROM runs")]


def stored_files(data_dir: Path) -> list[str]:
    runs = data_dir / "objects" / "runs"
    return sorted(p.name for p in runs.iterdir()) if runs.exists() else []


@pytest.mark.parametrize(
    "target",
    [
        # The files are stored, the row not yet: where a Ctrl-C left files without a row.
        "services.embedded.bench:_store",
        # The row committed, the report being printed: a Ctrl-C there died silently.
        "services.cli.commands.bench:_print_reports",
    ],
)
def test_ctrl_c_after_measuring_stores_the_run_whole_and_says_so(
    tmp_path: Path, target: str
) -> None:
    result = bench_signalled_at(target, tmp_path)
    text = result.stdout + result.stderr
    assert result.returncode == EXIT_INTERRUPTED, text
    assert "Traceback" not in text and "terminate called" not in text, text
    match = re.search(r"interrupted after the run was stored: run ([0-9a-f-]{36})", text)
    assert match, text
    # The row and the files agree: both there, for the run the message names.
    assert stored_rows(tmp_path / "benchstack.db") == [match.group(1)]
    assert stored_files(tmp_path) == [match.group(1)]
    assert (tmp_path / "objects" / "runs" / match.group(1) / "attempt-1").is_dir()


@pytest.mark.parametrize(
    "target",
    [
        # Preparing the data, before the guarded measure-and-store.
        "services.embedded.bench:prepare_shard",
        # Loading the model, inside it: noted, and acted on before LoadGen starts.
        "services.workloads.loadgen.measure:load_backend",
    ],
)
def test_ctrl_c_before_measuring_ends_stores_nothing_and_says_so(
    tmp_path: Path, target: str
) -> None:
    result = bench_signalled_at(target, tmp_path)
    text = result.stdout + result.stderr
    assert result.returncode == EXIT_INTERRUPTED, text
    assert "Traceback" not in text, text
    assert text.rstrip().endswith(INTERRUPTED_MESSAGE), text
    assert stored_rows(tmp_path / "benchstack.db") == []
    assert stored_files(tmp_path) == []


def test_an_error_while_storing_is_raised_as_it_is() -> None:
    # A Ctrl-C noted in the block does not hide the error that stopped the storing.
    with pytest.raises(OSError, match="disk full"), storing_is_atomic("r-1"):
        os.kill(os.getpid(), signal.SIGINT)
        raise OSError("disk full")
    assert interrupted_message() == INTERRUPTED_MESSAGE  # nothing was stored
