"""Telling a live process from a dead one, and the process a pid was recorded for from
one that got the pid later."""

from __future__ import annotations

import os
import subprocess
import sys

from shared.processes import exit_text, pid_alive, same_process, this_command_line


def test_a_zombie_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped
    assert not pid_alive(child.pid)
    child.wait()


def test_same_process_compares_the_recorded_command_line() -> None:
    mine = this_command_line()
    assert "pytest" in mine or "py.test" in mine or sys.argv[0] in mine
    assert same_process(os.getpid(), mine)
    assert not same_process(os.getpid(), "python -m something.else\0")
    assert same_process(os.getpid(), "")  # nothing recorded: the pid is trusted


def test_same_process_of_an_ended_pid_is_false() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not same_process(child.pid, "")


def test_exit_text_reads_as_a_person_would() -> None:
    assert exit_text(3) == "exited with code 3"
    assert exit_text(-9).startswith("was killed by SIGKILL (kill -9")
    assert exit_text(-15) == "was killed by SIGTERM"
    assert exit_text(None) == "did not exit"
