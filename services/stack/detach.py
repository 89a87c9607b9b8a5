"""`benchstack up -d`: the process that starts the services stays behind to supervise them.

The command forks before it starts anything. The parent only waits on a pipe and exits
with the child's verdict once the stack is up or has failed. The child starts the
services, so they are its own children: when one dies it reads how (a SIGKILL from the
kernel's out-of-memory killer included), which a process that adopted them later could
not. It prints their start-up to the terminal, then leaves it (a session of its own,
output to ``supervisor.log``) and supervises like a foreground `up`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

READY = b"0"


@dataclass
class Detaching:
    """The child's end: ``ready`` lets the waiting command exit 0. Should the child exit
    first (a failed start-up, an exception), the pipe closes and the command exits 1."""

    verdict_fd: int

    def ready(self, log_path: Path) -> None:
        """Leave the terminal for ``log_path`` and let the command that started us return."""
        os.setsid()  # no SIGHUP or terminal Ctrl-C from here on
        sys.stdout.flush()
        sys.stderr.flush()
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null_fd = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null_fd, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        os.close(null_fd)
        os.write(self.verdict_fd, READY)
        os.close(self.verdict_fd)


def fork_and_wait() -> Detaching:
    """Returns in the child only. The parent exits with the child's verdict: 0 once it is
    ``ready``, 1 if it ended before. Call before any thread starts (fork copies one)."""
    read_fd, write_fd = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read_fd)
        return Detaching(write_fd)
    os.close(write_fd)
    try:
        verdict = os.read(read_fd, 1)
    except KeyboardInterrupt:  # Ctrl-C reaches the child as well: it is still in our group
        verdict = b""
    # os._exit: the child owns everything set up so far; nothing here is to be flushed
    # or torn down twice.
    os._exit(0 if verdict == READY else 1)
