"""Preprocessing in a child under a memory limit: a MemoryError, a kill or a cancel
comes back as a reason, never as a dead worker or a child left running."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np

from services.preprocess.bounded_child import run_bounded
from shared.processes import pid_alive

MB = 2**20


def allocate_gigabytes() -> int:
    return int(np.ones(2 * 1024 * MB, dtype=np.uint8).sum())


def test_an_allocation_over_the_limit_says_what_it_needed() -> None:
    start = time.monotonic()
    result = run_bounded(
        allocate_gigabytes,
        memory_limit_bytes=256 * MB,
        should_stop=lambda: None,
        doing="preparing shard 3",
        poll_s=0.05,
    )
    assert result.value is None and result.stopped is None
    assert result.error is not None
    assert result.error.startswith(
        "needed more than 0.25 GB of memory while preparing shard 3 (the limit is "
        "BENCHSTACK_MAX_PREPROCESS_MEMORY_MB)"
    ), result.error
    assert time.monotonic() - start < 10


def test_the_value_comes_back_within_the_limit() -> None:
    result = run_bounded(
        lambda: np.arange(1000).sum(),
        memory_limit_bytes=256 * MB,
        should_stop=lambda: None,
        doing="preparing shard 0",
        poll_s=0.05,
    )
    assert result.value == 499500 and result.error is None


def test_an_error_without_text_names_its_class() -> None:
    def fail() -> None:
        raise KeyError

    result = run_bounded(fail, memory_limit_bytes=0, should_stop=lambda: None, doing="x")
    assert result.error == "KeyError while x"


def test_a_killed_child_is_a_reason_with_the_limit() -> None:
    result = run_bounded(
        lambda: os.kill(os.getpid(), signal.SIGKILL),
        memory_limit_bytes=512 * MB,
        should_stop=lambda: None,
        doing="preparing shard 1",
        poll_s=0.05,
    )
    assert result.error == (
        "the process preparing shard 1 was killed by SIGKILL (kill -9, or the kernel's "
        "out-of-memory killer); it may have needed more than 0.5 GB of memory "
        "(BENCHSTACK_MAX_PREPROCESS_MEMORY_MB)"
    )


def test_a_stopped_child_is_ended_at_once(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"

    def linger() -> None:
        pid_file.write_text(str(os.getpid()))
        time.sleep(60)

    asked = time.monotonic()
    result = run_bounded(
        linger,
        memory_limit_bytes=256 * MB,
        should_stop=lambda: "cancelled" if pid_file.exists() else None,
        doing="preparing shard 2",
        poll_s=0.05,
    )
    assert result.stopped == "cancelled"
    assert time.monotonic() - asked < 10
    assert not pid_alive(int(pid_file.read_text()))


def _from_a_daemon(results: Any) -> None:
    outcome = run_bounded(
        lambda: 6 * 7, memory_limit_bytes=0, should_stop=lambda: None, doing="answering"
    )
    results.put((outcome.value, outcome.error))


def test_a_daemonic_worker_process_may_run_it() -> None:
    """Celery's prefork children are daemonic, and multiprocessing refuses them children:
    the bounded child is forked without it."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    results = context.Queue()
    worker = context.Process(target=_from_a_daemon, args=(results,), daemon=True)
    worker.start()
    try:
        assert results.get(timeout=30) == (42, None)
    finally:
        worker.join(10)
