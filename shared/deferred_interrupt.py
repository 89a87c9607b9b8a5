"""Ctrl-C noted, not raised, while a block runs: for work that must finish whole (storing a
run's files and its row) or that runs Python callbacks inside native code.

A KeyboardInterrupt raised in a callback that LoadGen or onnxruntime called unwinds through
their C++ frames, and the process aborts (SIGABRT, ``std::bad_function_call``) with what
it had measured lost. Within ``deferred_interrupt()`` SIGINT only sets ``pressed``; the
caller looks at it where stopping is safe (between bricks, once a row is committed).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType


class DeferredInterrupt:
    """Whether Ctrl-C was pressed within the block, and what to say when it is."""

    def __init__(self, note: str = "") -> None:
        self.pressed = False
        self.note = note  # written to stderr at each press: what the process does now

    def is_set(self) -> bool:
        return self.pressed

    def handle(self, _signum: int, _frame: FrameType | None) -> None:
        self.pressed = True
        if self.note:
            # os.write, not print: a handler may run in the middle of another write.
            with contextlib.suppress(OSError):
                os.write(2, f"\n{self.note}\n".encode())


@contextlib.contextmanager
def deferred_interrupt(note: str = "") -> Iterator[DeferredInterrupt]:
    """Within the block, SIGINT sets ``pressed`` (and writes ``note``) instead of raising
    KeyboardInterrupt; the previous handler is back after it.

    Outside the main thread, or where SIGINT is ignored (a background job), nothing
    changes: signal handlers can only be set from the main thread, and an ignored SIGINT
    must stay ignored (``pressed`` then stays False).
    """
    deferred = DeferredInterrupt(note)
    if threading.current_thread() is not threading.main_thread():
        yield deferred
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:
        yield deferred
        return
    signal.signal(signal.SIGINT, deferred.handle)
    try:
        yield deferred
    finally:
        signal.signal(signal.SIGINT, previous)
