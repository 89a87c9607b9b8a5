"""Ctrl-C while LoadGen runs: leave at once with exit code 130, never a signal crash.

Python raises KeyboardInterrupt in the main thread, and LoadGen calls the SUT's issue
callback from the thread that called StartTest - the main thread. A KeyboardInterrupt raised
there unwinds through LoadGen's C++ frames while its own threads still run, and the process
dies of SIGABRT ("terminate called without an active exception") or SIGSEGV. LoadGen has
no way to stop a test early either: a SingleStream or Server test keeps issuing until its
minimum duration, however fast the SUT completes.

So, while a measurement runs, SIGINT raises nothing: CPython's C-level handler writes the
signal number to a wakeup pipe from whichever thread the kernel picked, and a watcher thread
reading it ends the process with ``os._exit(130)`` after running the cleanups it was given.
Nothing was stored: the LoadGen workload's ``measure`` uploads a run's files only after
LoadGen returns, and the embedded launcher stores its row after that.

``storing_is_atomic`` wraps the launcher's whole measure-and-store: Ctrl-C is deferred
there (shared/deferred_interrupt.py) except while LoadGen runs, where the ``measuring``
guard it yields (handed to ``measure`` as its ``interruptible`` hook) leaves as above. A
Ctrl-C before LoadGen starts (the model loading) is acted on once it does: nothing stored.
One after LoadGen returned waits for the row's commit: a run is stored whole (files and
row) or not at all, and the process says "interrupted after the run was stored: run <id>"
and exits 130, without a traceback.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

from shared.deferred_interrupt import deferred_interrupt

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for a Ctrl-C
INTERRUPTED_MESSAGE = "interrupted: nothing stored"
STORED_MESSAGE = "interrupted after the run was stored: run {run_id}"
# The run this process stored last, until another measurement starts: a Ctrl-C between
# the two (the report printed, the next run's data prepared) is after that run was stored.
_last_stored: list[str] = []
# The guard around LoadGen's run that storing_is_atomic yields (a RunHooks.interruptible).
MeasuringGuard = Callable[..., contextlib.AbstractContextManager[None]]
# Shown again in case a progress display hid the cursor and has no chance to restore it.
_SHOW_CURSOR = "\x1b[?25h"


def _ignore(_signum: int, _frame: FrameType | None) -> None:
    """The Python-level handler: nothing. The watcher thread acts on the wakeup byte."""


def _leave(cleanups: list[Callable[[], None]]) -> None:
    for cleanup in cleanups:
        with contextlib.suppress(Exception):
            cleanup()
    with contextlib.suppress(Exception):
        if sys.stderr.isatty():
            sys.stderr.write(_SHOW_CURSOR)
        sys.stderr.write(f"\n{INTERRUPTED_MESSAGE}\n")
        sys.stderr.flush()
    # No interpreter shutdown: it would join or destroy LoadGen's running C++ threads.
    os._exit(EXIT_INTERRUPTED)


def _watch(read_fd: int, cleanups: list[Callable[[], None]]) -> None:
    while True:
        try:
            data = os.read(read_fd, 64)
        except OSError:
            return
        if not data:
            return  # the pipe was closed: the measurement ended normally
        if signal.SIGINT in data:
            _leave(cleanups)


@contextlib.contextmanager
def exit_on_interrupt(*cleanups: Callable[[], None]) -> Iterator[None]:
    """Within the block, Ctrl-C runs ``cleanups`` and exits the process with code 130.

    Outside the main thread, or where SIGINT is ignored (a background job), the block
    runs unchanged: signal handlers can only be set from the main thread, and an
    ignored SIGINT must stay ignored.
    """
    _last_stored.clear()  # a new run is being measured; it is not stored yet
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous_handler = signal.getsignal(signal.SIGINT)
    if previous_handler is signal.SIG_IGN:
        yield
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    watcher = threading.Thread(
        target=_watch, args=(read_fd, list(cleanups)), name="sigint-watcher", daemon=True
    )
    watcher.start()
    previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    signal.signal(signal.SIGINT, _ignore)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous_handler)
        signal.set_wakeup_fd(previous_fd)
        os.close(write_fd)
        watcher.join()
        os.close(read_fd)


def interrupted_message() -> str:
    """What a Ctrl-C outside a measurement means: the run stored last, when no other run
    has been measured since; else nothing stored."""
    if _last_stored:
        return STORED_MESSAGE.format(run_id=_last_stored[-1])
    return INTERRUPTED_MESSAGE


@contextlib.contextmanager
def storing_is_atomic(run_id: str) -> Iterator[MeasuringGuard]:
    """Wrap a run's measuring and storing, through its row's commit: Ctrl-C within waits
    for the block's end, except inside the yielded guard (LoadGen's run, see
    ``exit_on_interrupt``); then, with the row committed, the process says so and exits 130
    (SystemExit: ``finally`` blocks run, no traceback). An error in the block is raised as
    it is: the Ctrl-C is not what stopped the run."""
    with deferred_interrupt() as interrupt:

        @contextlib.contextmanager
        def measuring(*cleanups: Callable[[], None]) -> Iterator[None]:
            if interrupt.pressed:  # pressed while the model loaded: LoadGen never starts
                _leave(list(cleanups))
            with exit_on_interrupt(*cleanups):
                yield

        yield measuring
        _last_stored[:] = [run_id]  # before Ctrl-C can raise again
    if interrupt.pressed:
        with contextlib.suppress(Exception):
            if sys.stderr.isatty():
                sys.stderr.write(_SHOW_CURSOR)
            sys.stderr.write(f"\n{STORED_MESSAGE.format(run_id=run_id)}\n")
            sys.stderr.flush()
        raise SystemExit(EXIT_INTERRUPTED)
