"""`up -d`'s fork: the command returns with the child's verdict, and the child carries on
in its own session with its output in the log."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from shared.processes import pid_alive

FORK = "import os, pathlib, sys, time\nfrom services.stack.detach import fork_and_wait\n"


def _wait_for(path: Path, timeout_s: float = 30) -> str:
    deadline = time.monotonic() + timeout_s
    while not path.exists() or not path.read_text().endswith("\n"):
        assert time.monotonic() < deadline, f"{path} not written"
        time.sleep(0.05)
    return path.read_text()


def test_a_child_that_ends_before_it_is_ready_gives_the_command_its_status() -> None:
    script = FORK + "d = fork_and_wait()\nprint('error: api did not start', flush=True)\n"
    result = subprocess.run(
        [sys.executable, "-c", script + "sys.exit(3)\n"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 3
    assert "api did not start" in result.stdout  # the child still had the terminal


def test_a_ready_child_lets_the_command_return_and_goes_on_into_its_log(tmp_path: Path) -> None:
    log, go, done = tmp_path / "supervisor.log", tmp_path / "go", tmp_path / "done"
    script = FORK + (
        "d = fork_and_wait()\n"
        "print('starting', flush=True)\n"
        f"print('delivered:', d.ready(pathlib.Path({str(log)!r})), flush=True)\n"
        "print('session leader:', os.getsid(0) == os.getpid(), flush=True)\n"
        f"while not pathlib.Path({str(go)!r}).exists(): time.sleep(0.01)\n"
        "print('still supervising', flush=True)\n"
        f"pathlib.Path({str(done)!r}).write_text(str(os.getpid()) + '\\n')\n"
    )
    # Returns while the child waits for `go`: its pipes no longer hold the command's.
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout == "starting\n", result
    go.touch()
    child = int(_wait_for(done))
    assert log.read_text() == "delivered: True\nsession leader: True\nstill supervising\n"
    deadline = time.monotonic() + 10
    while pid_alive(child):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_child_whose_command_is_gone_learns_it_is_not_delivered(tmp_path: Path) -> None:
    log, go, child_pid = tmp_path / "supervisor.log", tmp_path / "go", tmp_path / "child"
    script = FORK + (
        "d = fork_and_wait()\n"
        f"pathlib.Path({str(child_pid)!r}).write_text(str(os.getpid()) + '\\n')\n"
        f"while not pathlib.Path({str(go)!r}).exists(): time.sleep(0.01)\n"
        f"print('delivered:', d.ready(pathlib.Path({str(log)!r})), flush=True)\n"
    )
    command = subprocess.Popen([sys.executable, "-c", script])
    child = int(_wait_for(child_pid))
    command.send_signal(signal.SIGKILL)  # a caller's timeout, a cancelled job
    command.wait()
    go.touch()
    deadline = time.monotonic() + 10
    while pid_alive(child):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert log.read_text() == "delivered: False\n"
