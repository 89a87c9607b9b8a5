"""Whether a process is alive, and how one ended, as the stack manager, the host slot and
the measurement child all need to know."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (exited, not yet reaped by its parent) is gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        status = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return True  # no /proc (macOS): the signal said it exists
    return status != "Z"


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (/proc/<pid>/stat field 22): with the
    pid, it names one process for good, whatever it later writes into its command line
    (Celery's setproctitle) and whichever process gets the pid after it. None without /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[19])  # fields[0] is field 3, the state


def this_command_line() -> str:
    """This process's command line as /proc has it, to recognise it later by pid."""
    try:
        return Path("/proc/self/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def same_process(pid: int, command: str) -> bool:
    """Whether ``pid`` still runs the command recorded for it (``this_command_line``), not
    a process that got the pid after it ended; an empty record or no /proc trusts the pid."""
    if not pid_alive(pid):
        return False
    if not command:
        return True
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace") == command
    except OSError:
        return True


def exit_text(code: int | None) -> str:
    """How a process ended, as a person reads it: -9 is "was killed by SIGKILL"."""
    if code is None:
        return "did not exit"
    if code < 0:
        with contextlib.suppress(ValueError):
            name = signal.Signals(-code).name
            hint = " (kill -9, or the kernel's out-of-memory killer)" if -code == 9 else ""
            return f"was killed by {name}{hint}"
    return f"exited with code {code}"
