"""What runs inside a measurement child (services/inference/isolated.py starts it): a
per-run child answers one request, the resident child serves one after another. Each
dies with the worker, logs to the worker's stderr and runs its request under the
worker's environment and directory. Nothing here runs in the worker itself.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from shared.storage import ObjectLost, ObjectStoreUnavailable

# In the child: the connection to the parent, for announce_started().
_PARENT: Connection | None = None


def announce_waiting(holders: list[str]) -> None:
    """Called by the child's target when it finds the host taken and waits for it: the
    worker shows why its RUNNING evaluation has not started (``holders``: the runs then
    measuring on this host)."""
    if _PARENT is not None:
        _PARENT.send(("waiting", list(holders)))


def announce_started() -> None:
    """Called by the child's target when its real work starts (it holds the host): the
    time limit counts from here, not from the wait for the host."""
    if _PARENT is not None:
        _PARENT.send(("started", None))


def child_main(
    target: Callable[..., Any],
    args: tuple[Any, ...],
    conn: Connection,
    worker: int,
    environment: dict[str, str],
    cwd: str,
) -> None:  # pragma: no cover - runs in the child
    global _PARENT
    _PARENT = conn
    _die_with_parent(worker)
    _log_to_stderr()
    try:
        _serve(conn, target, args, environment, cwd)
    finally:
        conn.close()


def _log_to_stderr() -> None:  # pragma: no cover - runs in the child
    """The fork server configured no logging, so without this the child's INFO lines (a
    model loaded or kept, a run's thread choice) would be lost; its stderr is the worker's,
    so they land in the worker's log."""
    if not logging.getLogger().handlers:
        logging.basicConfig(
            level=logging.INFO,
            format="%(asctime)s %(name)s %(levelname)s [measurement] %(message)s",
        )


def _serve(
    conn: Connection,
    target: Callable[..., Any],
    args: tuple[Any, ...],
    environment: dict[str, str],
    cwd: str,
) -> None:  # pragma: no cover - runs in the child
    """Run one request under the worker's environment and directory; send its answer."""
    os.environ.clear()
    os.environ.update(environment)
    os.chdir(cwd)
    try:
        conn.send(("ok", target(*args)))
    except ObjectStoreUnavailable as exc:
        # An outage, not the run's fault: the worker retries the run once S3 is back.
        conn.send(("transient", exc.cause))
    except BaseException as exc:
        lost = lost_object(exc)
        if lost is not None:
            # Its shards are gone from the store: the worker has them prepared again.
            conn.send(("lost", lost.key))
        else:
            conn.send(("error", f"{exc.__class__.__name__}: {exc}"))


def lost_object(exc: BaseException) -> ObjectLost | None:
    """The ObjectLost that caused ``exc``, if one did (a backend or LoadGen may wrap it)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ObjectLost):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _die_with_parent(worker: int) -> None:  # pragma: no cover - runs in the child
    """A worker killed with -9 must not leave its run measuring on: the orphan would hold
    the host and load the machine under the run dispatched again. Linux: the kernel sends
    SIGKILL when the parent (the fork server, which exits when the worker does) dies; a
    thread also watches for the worker's exit (the only guard where prctl is missing).

    ``worker`` is the worker's pid as the worker saw it: it may have died before prctl
    could take effect."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    parent = os.getppid()
    if not _alive(worker):
        os._exit(1)

    def watch() -> None:
        while True:
            if os.getppid() != parent or not _alive(worker):
                os._exit(1)
            time.sleep(1.0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _alive(pid: int) -> bool:  # pragma: no cover - runs in the child
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, owned by someone else
    # A zombie (killed, not yet reaped by its own parent) answers signal 0 too.
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def resident_main(conn: Connection, worker: int) -> None:  # pragma: no cover - child
    """Serve (target, args, environment, cwd) requests one at a time until the worker
    closes the pipe; each answer is sent like a per-run child's."""
    global _PARENT
    _PARENT = conn
    _die_with_parent(worker)
    _log_to_stderr()
    while True:
        try:
            target, args, environment, cwd = conn.recv()
        except (EOFError, OSError):
            return
        _serve(conn, target, args, environment, cwd)
