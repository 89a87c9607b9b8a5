"""`up -d`'s fork: the command returns with the child's verdict, and the child carries on
in its own session with its output in the log."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from shared.processes import pid_alive


def _run(code: str) -> subprocess.CompletedProcess[str]:
    script = "from services.stack.detach import fork_and_wait\nd = fork_and_wait()\n" + code
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )


def test_a_child_that_ends_before_it_is_ready_makes_the_command_fail() -> None:
    result = _run("print('error: up: api did not start', flush=True)\nraise SystemExit(1)\n")
    assert result.returncode == 1
    assert "api did not start" in result.stdout  # the child still had the terminal


def test_a_ready_child_lets_the_command_return_and_goes_on_into_its_log(tmp_path: Path) -> None:
    log = tmp_path / "supervisor.log"
    pid_file = tmp_path / "child.pid"
    code = (
        "import os, time\n"
        "print('starting', flush=True)\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        f"d.ready(__import__('pathlib').Path({str(log)!r}))\n"
        "print('session leader:', os.getsid(0) == os.getpid(), flush=True)\n"
        "time.sleep(3)\n"
        "print('still supervising', flush=True)\n"
    )
    started = time.monotonic()
    # The command's pipes close when it returns: the child no longer holds them.
    result = _run(code)
    assert result.returncode == 0
    assert time.monotonic() - started < 3, "returned while the child went on"
    assert result.stdout == "starting\n"
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while pid_alive(child) or "still supervising" not in log.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert log.read_text() == "session leader: True\nstill supervising\n"
