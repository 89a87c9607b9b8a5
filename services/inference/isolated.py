"""Run one measurement in a child process the worker can end.

LoadGen runs in C++ and cannot be interrupted from Python, so a cancelled run would hold
its agent until LoadGen finished. In a child, the worker ends it within a poll interval,
and a crash or an out-of-memory kill of the run takes the child, not the agent.

The child is not forked from the worker: the worker's threads (heartbeat, Celery's) and
any framework thread pool would be copied mid-state by a fork. Nor is it spawned, which
costs a fresh interpreter importing the measurement's modules every run (about 1 s of CPU
here for a 0.1 s run, a quarter of the machine under benchmarks/api_load.py). It is forked
from multiprocessing's fork server: a single-threaded process started once, which imports
``PRELOAD`` and forks a child per run (about 0.03 s). Each child takes the worker's
environment and working directory as they are at the run, not as they were when the
server started. What runs inside the child is services/inference/measurement_child.py.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from services.inference.measurement_child import child_main, resident_main
from shared.processes import exit_text

log = logging.getLogger(__name__)

# How long the child gets to exit on SIGTERM before SIGKILL.
TERMINATE_GRACE_S = 3.0

# Imported once by the fork server, so no child imports them again: the measurement's
# modules. They must start no thread at import (a fork copies only the forking thread).
# shared.s3_store: the tasks import it lazily, and minio's import parses pycryptodome's C
# declarations (0.8 s of CPU, 65 % of a null run's child). fork_preload reads the
# machine's description once.
PRELOAD = ["services.tasks.inference", "shared.s3_store", "services.inference.fork_preload"]


@dataclass(frozen=True)
class ChildOutcome:
    """What became of the child: a value, an error message, or why it was ended."""

    value: Any = None
    error: str | None = None
    stopped: str | None = None  # the reason given by should_stop, or the time limit
    # The object store was unavailable (its cause in ``error``): worth measuring again.
    transient: bool = False
    # The key of an object the run needs that is gone from the store (ObjectLost): the
    # evaluation goes back to have it made again.
    lost: str | None = None
    # The child died without answering (killed, crashed): measured again, as a run whose
    # worker was killed is, within ``max_dispatches``.
    died: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and self.stopped is None


def memory_of(pid: int) -> int:
    """Resident bytes of a process and its descendants; 0 once it is gone."""
    import psutil

    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            total += process.memory_info().rss
    return total


def _fork_server() -> multiprocessing.context.ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    # Takes effect when the server starts, at the first child (a no-op afterwards).
    context.set_forkserver_preload(PRELOAD)
    return context


def run_in_child(
    target: Callable[..., Any],
    args: tuple[Any, ...],
    *,
    should_stop: Callable[[], str | None],
    time_limit_s: float,
    poll_s: float = 0.5,
    memory_limit_bytes: int = 0,
    resident: bool = False,
    on_waiting: Callable[[list[str] | None], None] | None = None,
) -> ChildOutcome:
    """Call ``target(*args)`` in a child forked from the fork server; end it when
    ``should_stop`` returns a reason or after ``time_limit_s``, counted from the child's
    ``announce_started()`` (or its start, when it announces nothing), or when its resident
    memory (with its own children) passes ``memory_limit_bytes`` (0: no limit), so a run
    that balloons is ended with that reason before the kernel's OOM killer picks a victim
    on the whole machine. ``target`` and its result must pickle.

    ``resident``: call it in this worker's resident child (``ResidentChild``), started at
    the first such call and kept for the next one while every run returns, so what it
    keeps in memory (loaded models) outlives a run. A run that is stopped, over its
    memory or dies ends the resident child too; the next call starts a fresh one. A call
    made while another thread uses the resident child gets a child of its own.

    ``on_waiting(holders)``: called when the child announces it waits for the host
    (``announce_waiting``), with the runs holding it, and ``on_waiting(None)`` once it
    starts after such a wait."""
    waiting = on_waiting or _ignore
    if resident and _RESIDENT_LOCK.acquire(blocking=False):
        try:
            return _run_in_resident(
                target, args, should_stop, time_limit_s, poll_s, memory_limit_bytes, waiting
            )
        finally:
            _RESIDENT_LOCK.release()
    context = _fork_server()
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(
        target=child_main,
        args=(target, args, sender, os.getpid(), dict(os.environ), os.getcwd()),
        daemon=True,
    )
    child.start()
    sender.close()
    try:
        outcome, answered = _await_outcome(
            receiver, child, should_stop, time_limit_s, poll_s, memory_limit_bytes, waiting
        )
        if answered:
            child.join(TERMINATE_GRACE_S)  # it exits on its own once it has answered
        if outcome is not None:
            return outcome
    finally:
        _end(child)
        receiver.close()
    return ChildOutcome(error=f"the measurement process {exit_text(child.exitcode)}", died=True)


def _await_outcome(
    receiver: Connection,
    child: multiprocessing.process.BaseProcess,
    should_stop: Callable[[], str | None],
    time_limit_s: float,
    poll_s: float,
    memory_limit_bytes: int,
    on_waiting: Callable[[list[str] | None], None],
) -> tuple[ChildOutcome | None, bool]:
    """The child's answer, or why it was stopped (None when it died without answering),
    and whether it answered: a child that did not may still be running."""
    deadline = time.monotonic() + time_limit_s
    waited = False
    while True:
        if receiver.poll(poll_s):
            try:
                status, value = receiver.recv()
            except EOFError:
                return None, False  # the child died before it could answer
            if status == "started":
                deadline = time.monotonic() + time_limit_s
                if waited:
                    _notify(on_waiting, None)
                continue
            if status == "waiting":
                waited = True
                _notify(on_waiting, list(value))
                continue
            if status == "ok":
                return ChildOutcome(value=value), True
            if status == "transient":
                return ChildOutcome(error=str(value), transient=True), True
            if status == "lost":
                return ChildOutcome(
                    error=f"{value} was missing from the object store", lost=str(value)
                ), True
            return ChildOutcome(error=str(value)), True
        if not child.is_alive() and not receiver.poll(0):
            return None, False
        stopped = should_stop()
        if stopped is None and time.monotonic() > deadline:
            stopped = f"the run exceeded its time limit of {time_limit_s:g} s"
        if stopped is not None:
            return ChildOutcome(stopped=stopped), False
        used = memory_of(child.pid) if memory_limit_bytes and child.pid else 0
        if used > memory_limit_bytes:
            return ChildOutcome(
                error=f"the run used {used / 2**20:.0f} MiB, over its memory limit of "
                f"{memory_limit_bytes / 2**20:.0f} MiB (BENCHSTACK_MAX_RUN_MEMORY_MB); "
                "it was ended"
            ), False


def _ignore(holders: list[str] | None) -> None:
    pass


def _notify(on_waiting: Callable[[list[str] | None], None], holders: list[str] | None) -> None:
    """A notice about the wait never ends the run it describes."""
    try:
        on_waiting(holders)
    except Exception:
        log.warning("could not record the wait for the host", exc_info=True)


def _end(child: multiprocessing.process.BaseProcess) -> None:
    """SIGTERM, then SIGKILL after the grace; reaps it."""
    if child.is_alive():
        child.terminate()
        child.join(TERMINATE_GRACE_S)
        if child.is_alive():
            child.kill()
    child.join(TERMINATE_GRACE_S)


@dataclass
class ResidentChild:
    """The worker's long-lived measurement process: forked from the fork server like a
    per-run child, but it serves run after run over one pipe (``resident_main``)."""

    process: multiprocessing.process.BaseProcess
    connection: Connection
    # The worker's environment and working directory it serves: a run under others gets
    # a fresh child, since settings, clients and engines are cached from the first run.
    surroundings: tuple[dict[str, str], str]
    runs: int = 0


# One per worker process; used by one run at a time (the lock).
_RESIDENT: ResidentChild | None = None
_RESIDENT_LOCK = threading.Lock()


def _start_resident(surroundings: tuple[dict[str, str], str]) -> ResidentChild:
    context = _fork_server()
    ours, theirs = context.Pipe(duplex=True)
    process = context.Process(
        target=resident_main, args=(theirs, os.getpid()), daemon=True, name="measurement"
    )
    process.start()
    theirs.close()
    return ResidentChild(process, ours, surroundings)


def _run_in_resident(
    target: Callable[..., Any],
    args: tuple[Any, ...],
    should_stop: Callable[[], str | None],
    time_limit_s: float,
    poll_s: float,
    memory_limit_bytes: int,
    on_waiting: Callable[[list[str] | None], None],
) -> ChildOutcome:
    global _RESIDENT
    surroundings = (dict(os.environ), os.getcwd())
    if _RESIDENT is not None and (
        not _RESIDENT.process.is_alive() or _RESIDENT.surroundings != surroundings
    ):
        end_resident()
    if _RESIDENT is None:
        _RESIDENT = _start_resident(surroundings)
    resident = _RESIDENT
    outcome: ChildOutcome | None = None
    answered = False
    try:
        resident.connection.send((target, args, *surroundings))
        outcome, answered = _await_outcome(
            resident.connection,
            resident.process,
            should_stop,
            time_limit_s,
            poll_s,
            memory_limit_bytes,
            on_waiting,
        )
    except (BrokenPipeError, ConnectionResetError, EOFError):
        outcome = None
    finally:
        if answered:
            resident.runs += 1
        else:
            end_resident()  # stopped while measuring, over its memory, or dead: never reused
    if outcome is not None:
        return outcome
    return ChildOutcome(
        error=f"the measurement process {exit_text(resident.process.exitcode)}", died=True
    )


def end_resident() -> None:
    """End this worker's resident child (and what it keeps loaded), if it has one."""
    global _RESIDENT
    resident, _RESIDENT = _RESIDENT, None
    if resident is not None:
        _end(resident.process)
        resident.connection.close()
