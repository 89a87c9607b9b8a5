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
    first (a failed start-up, an exception, Ctrl-C), the command exits with its status."""

    verdict_fd: int

    def ready(self, log_path: Path) -> bool:
        """Leave the terminal for ``log_path`` and let the command that started us return.
        False when that command is gone (killed by a timeout, a cancelled job): it told
        its caller nothing good, so the caller must not be left with a stack running."""
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
        try:
            os.write(self.verdict_fd, READY)  # Python ignores SIGPIPE: an error instead
        except BrokenPipeError:
            return False
        finally:
            os.close(self.verdict_fd)
        return True


def _exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code  # a signal, as a shell reports it


def fork_and_wait() -> Detaching:
    """Returns in the child only. The parent exits 0 once the child is ``ready``, else
    with the child's own exit status. Call before any thread starts (fork copies one)."""
    read_fd, write_fd = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read_fd)
        return Detaching(write_fd)
    os.close(write_fd)
    while True:
        try:
            verdict = os.read(read_fd, 1)
            break
        except KeyboardInterrupt:
            # Ctrl-C reached the child too (it is still in our process group); it stops
            # what it started and ends, and its status is ours.
            continue
    if verdict == READY:
        # os._exit: the child owns everything set up so far; nothing here is to be
        # flushed or torn down twice.
        os._exit(0)
    _, status = os.waitpid(child, 0)
    os._exit(_exit_code(status))
