"""LoadGen's threads sleep precisely: the thread starting a test, and every thread it
starts meanwhile, has a 1 ns timer slack; the previous slack comes back after."""

from __future__ import annotations

import ctypes
import sys
import threading

import pytest

from services.inference.loadgen.timer_slack import PR_GET_TIMERSLACK, precise_sleeps

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="timer slack is a Linux setting (prctl)"
)


def _slack() -> int:
    return int(ctypes.CDLL(None).prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0))


def test_the_block_sleeps_precisely_and_its_threads_inherit_it() -> None:
    before = _slack()
    seen: list[int] = []
    with precise_sleeps():
        assert _slack() == 1
        started = threading.Thread(target=lambda: seen.append(_slack()))
        started.start()
        started.join()
    assert seen == [1]
    assert _slack() == before
