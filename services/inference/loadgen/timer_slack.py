"""Precise sleeps for LoadGen's threads: Linux's per-thread timer slack set to 1 ns.

LoadGen's Server scheduler sleeps until each query's scheduled time
(``std::this_thread::sleep_until``) and times the query from that scheduled time, so
every oversleep counts as latency. Linux lets a sleeping thread wake up to its timer
slack late (50 us by default) to batch wake-ups. Measured on this project's 2-core VM
with a SUT that completes each query inside its callback: Server p50 104 us with the
default slack, 55 us with 1 ns (SingleStream, which never sleeps: 1 us). A thread
inherits the slack of the thread that creates it, so setting it on the thread that
starts the test reaches LoadGen's issue and response threads and the SUT's workers.
Elsewhere than Linux this does nothing.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Iterator
from contextlib import contextmanager

PR_SET_TIMERSLACK = 29
PR_GET_TIMERSLACK = 30
PRECISE_NS = 1


def _prctl() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # a libc without prctl: sleeps stay as they are
        return None


@contextmanager
def precise_sleeps() -> Iterator[None]:
    """This thread's timer slack at 1 ns inside the block (threads started meanwhile
    keep it), the previous slack after."""
    prctl = _prctl()
    if prctl is None:
        yield
        return
    previous = int(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0))
    if previous < 0 or prctl(PR_SET_TIMERSLACK, PRECISE_NS, 0, 0, 0) != 0:
        yield  # refused (a seccomp filter): measure with the slack there is
        return
    try:
        yield
    finally:
        prctl(PR_SET_TIMERSLACK, previous, 0, 0, 0)
