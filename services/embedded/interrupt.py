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
LoadGen returns, and the embedded launcher stores its row after that (see
``services/embedded/bench.run_bench``, which hands this guard to ``measure`` as a hook).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for a Ctrl-C
INTERRUPTED_MESSAGE = "interrupted: the run in progress was stopped and not stored"
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
