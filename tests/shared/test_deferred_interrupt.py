"""deferred_interrupt: within the block Ctrl-C is noted, not raised; the previous handler
is back after it, and an ignored SIGINT stays ignored."""

from __future__ import annotations

import os
import signal
import time

from shared.deferred_interrupt import deferred_interrupt


def test_sigint_is_noted_not_raised_and_the_handler_comes_back() -> None:
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with deferred_interrupt() as interrupt:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler runs at the next bytecode; no KeyboardInterrupt
            assert interrupt.pressed and interrupt.is_set()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)


def test_an_ignored_sigint_stays_ignored() -> None:
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with deferred_interrupt() as interrupt:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
        assert not interrupt.pressed
    finally:
        signal.signal(signal.SIGINT, before)
