"""Preprocessing in a child process under a memory limit, which its caller can end.

A preprocess worker that ran a decompression bomb in its own process was SIGKILLed by the
kernel's OOM killer: the broker redelivered its message (``task_reject_on_worker_lost``),
the next worker died the same way, and nobody learnt why. In a child under an
address-space limit (``shared/memory_limit.limit_memory``, ``max_preprocess_memory_mb``)
the allocation that passes the limit fails with MemoryError instead, the machine stays
healthy, and the worker, still alive, reports "needed more than N GB": a deterministic
failure, acknowledged once, never redelivered. The worker polls ``should_stop`` while it
waits, so a cancelled evaluation's child is ended within a poll.

The child is forked: it shares the worker's imports and the samples without pickling
them; only its result (a shard's tensors, a few MB) comes back through a pipe.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from shared.memory_limit import error_text, gigabytes, limit_memory
from shared.processes import exit_text

MEMORY_SETTING = "BENCHSTACK_MAX_PREPROCESS_MEMORY_MB"
KILL_WAIT_S = 5.0


@dataclass(frozen=True)
class ChildResult:
    """What the child returned, or why there is nothing: its error (never empty) or the
    reason ``should_stop`` gave."""

    value: Any = None
    error: str | None = None
    stopped: str | None = None


def run_bounded(
    work: Callable[[], Any],
    *,
    memory_limit_bytes: int,
    should_stop: Callable[[], str | None],
    doing: str,
    poll_s: float = 1.0,
) -> ChildResult:
    """``work()`` in a forked child that may allocate at most ``memory_limit_bytes`` more
    than the worker held (0: no limit). ``doing`` ("preparing shard 3") is what an error
    says was being done. The child is killed as soon as ``should_stop`` gives a reason."""
    receiver, sender = multiprocessing.Pipe(duplex=False)
    child = _Forked.start(lambda: _child_main(work, sender, memory_limit_bytes, doing))
    sender.close()
    try:
        while not receiver.poll(poll_s):
            if not child.is_alive() and not receiver.poll(0):
                return ChildResult(error=_death(child.exitcode, memory_limit_bytes, doing))
            stopped = should_stop()
            if stopped is not None:
                return ChildResult(stopped=stopped)
        try:
            status, value = receiver.recv()
        except EOFError:  # it died as it answered
            child.join(KILL_WAIT_S)
            return ChildResult(error=_death(child.exitcode, memory_limit_bytes, doing))
        return ChildResult(value=value) if status == "ok" else ChildResult(error=value)
    finally:
        receiver.close()
        if child.is_alive():
            child.kill()  # preprocessing leaves nothing to clean up
        child.join(KILL_WAIT_S)


class _Forked:
    """A child made with os.fork, not multiprocessing.Process: a Celery prefork worker is a
    daemonic process, and multiprocessing refuses to start children from one."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.exitcode: int | None = None

    @classmethod
    def start(cls, main: Callable[[], None]) -> _Forked:
        pid = os.fork()
        if pid == 0:  # the child: run, then leave without the parent's exit handlers
            code = 0
            try:
                main()
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        return cls(pid)

    def is_alive(self) -> bool:
        if self.exitcode is not None:
            return False
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid == 0:
            return True
        self.exitcode = os.waitstatus_to_exitcode(status)
        return False

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)

    def join(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)


def _death(code: int | None, limit: int, doing: str) -> str:
    """Why a child that never answered is gone: SIGKILL most likely means the kernel's
    OOM killer, since what passes the limit gets a MemoryError instead."""
    text = f"the process {doing} {exit_text(code)}"
    if code == -signal.SIGKILL and limit:
        text += f"; it may have needed more than {gigabytes(limit)} of memory ({MEMORY_SETTING})"
    return text


def _child_main(work: Callable[[], Any], sender: Connection, limit: int, doing: str) -> None:
    _die_with_parent()
    _one_thread()
    limit_memory(limit, setting=MEMORY_SETTING)
    try:
        answer: tuple[str, Any] = ("ok", work())
    except BaseException as exc:  # everything goes back as text: nothing raises here
        answer = ("error", error_text(exc, doing))
    try:
        sender.send(answer)
    except MemoryError as exc:  # the result itself did not fit
        sender.send(("error", error_text(exc, f"{doing} (sending its result)")))
    finally:
        sender.close()


def _die_with_parent() -> None:
    """SIGKILL this child when the worker that forked it dies (Linux's PR_SET_PDEATHSIG),
    so a worker killed mid-shard leaves no preprocessing behind."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _one_thread() -> None:
    """Torch on one thread: a child forked after its parent ran torch on several threads
    waits for good on OpenMP's pool (as services/preprocess/pool.py's children do)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)
