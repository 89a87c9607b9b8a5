"""Ctrl-C during an embedded `benchstack bench`: exit 130 with one line, nothing stored,
never a signal crash - with real LoadGen in a real subprocess."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from services.embedded.interrupt import EXIT_INTERRUPTED, INTERRUPTED_MESSAGE, exit_on_interrupt


def _default_sigint() -> None:
    # The test runner may have been started with SIGINT ignored (a background job); the
    # child must see Ctrl-C as a person's terminal would deliver it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_bench(data_dir: Path, tmp: Path, scenario: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "BENCHSTACK_DATA_DIR": str(data_dir),
        "BENCHSTACK_HOST_SLOT_DIR": str(data_dir / "host"),
        "TMPDIR": str(tmp),
        "COLUMNS": "200",
    }
    env.pop("BENCHSTACK_DATABASE_URL", None)
    env.pop("BENCHSTACK_S3_ENDPOINT", None)
    command = [sys.executable, "-m", "services.cli.main", "bench", "resnet18"]
    command += ["--framework", "null", "-o", "service_time_ms=5", "--duration", "30"]
    command += ["--scenario", scenario, "--samples", "8"]
    return subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )


def _collect(stream: object, into: list[str], seen: threading.Event, marker: str) -> None:
    for line in stream:  # type: ignore[attr-defined]
        into.append(line)
        if marker in line:
            seen.set()


def _stored_runs(database: Path) -> int:
    if not database.exists():
        return 0
    with sqlite3.connect(database) as connection:
        has_runs = connection.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'runs'"
        ).fetchone()[0]
        return connection.execute("SELECT count(*) FROM runs").fetchone()[0] if has_runs else 0


@pytest.mark.parametrize("scenario", ["offline", "single-stream"])
def test_ctrl_c_while_measuring_exits_130_and_stores_nothing(tmp_path: Path, scenario: str) -> None:
    data_dir, tmp = tmp_path / "data", tmp_path / "tmp"
    tmp.mkdir()
    process = _start_bench(data_dir, tmp, scenario)
    lines: list[str] = []
    measuring = threading.Event()
    reader = threading.Thread(target=_collect, args=(process.stderr, lines, measuring, "measuring"))
    reader.start()
    try:
        assert measuring.wait(120), "".join(lines)
        time.sleep(1.0)  # well inside the 30 s test: LoadGen is issuing queries
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=10)
        took = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join()
    text = "".join(lines)
    assert code == EXIT_INTERRUPTED, f"exit {code} (negative: killed by a signal)\n{text}"
    assert took < 5, took
    assert text.rstrip().endswith(INTERRUPTED_MESSAGE), text
    assert "Traceback" not in text and "terminate called" not in text, text
    assert _stored_runs(data_dir / "benchstack.db") == 0
    assert not (data_dir / "objects" / "runs").exists()
    # Neither LoadGen's log folder nor this run's host registration is left behind.
    assert [p.name for p in tmp.iterdir() if p.name.startswith("benchstack-run-")] == []
    assert list((data_dir / "host" / "active").glob("*.json")) == []


def test_the_previous_handler_is_back_after_the_block() -> None:
    # A handler of the test's own: the inherited one may be SIG_IGN (a suite started in
    # the background), which exit_on_interrupt rightly keeps (the test below).
    def previous(signum: int, frame: object) -> None:
        raise AssertionError("not called")

    inherited = signal.signal(signal.SIGINT, previous)
    try:
        with exit_on_interrupt():
            assert signal.getsignal(signal.SIGINT) is not previous
        assert signal.getsignal(signal.SIGINT) is previous
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_an_ignored_sigint_stays_ignored() -> None:
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with exit_on_interrupt():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGINT)  # ignored: the process carries on
            time.sleep(0.1)
    finally:
        signal.signal(signal.SIGINT, before)
