"""A measurement in a child process: its value comes back, a cancel or a time limit ends
it at once, and a crash of the child is a failed run, not a dead worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from services.inference.isolated import run_in_child
from shared.processes import pid_alive


def answer(value: int) -> dict[str, int]:
    return {"value": value, "pid": os.getpid()}


def sleep_for(seconds: float) -> None:
    time.sleep(seconds)


def raise_error() -> None:
    raise RuntimeError("the backend broke")


def killed_by_the_kernel() -> None:
    # What the out-of-memory killer does to a run that grew too large.
    os.kill(os.getpid(), signal.SIGKILL)


def never_stop() -> str | None:
    return None


def surroundings(name: str) -> tuple[str | None, str, bool]:
    import sys

    return os.environ.get(name), os.getcwd(), "services.inference.tasks" in sys.modules


def test_the_value_comes_back_from_another_process() -> None:
    outcome = run_in_child(answer, (7,), should_stop=never_stop, time_limit_s=60)
    assert outcome.ok and outcome.value["value"] == 7
    assert outcome.value["pid"] != os.getpid()


def test_the_child_sees_the_worker_as_it_is_at_the_run_not_at_the_fork_servers_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_in_child(answer, (1,), should_stop=never_stop, time_limit_s=60)  # the server is up
    monkeypatch.setenv("BENCHSTACK_ISOLATED_PROBE", "set after the server started")
    monkeypatch.chdir(tmp_path)
    outcome = run_in_child(
        surroundings, ("BENCHSTACK_ISOLATED_PROBE",), should_stop=never_stop, time_limit_s=60
    )
    probe, cwd, preloaded = outcome.value
    assert probe == "set after the server started"
    assert Path(cwd) == tmp_path
    # The measurement's modules come imported from the fork server, not imported per run.
    assert preloaded


def test_a_cancel_ends_the_child_within_a_poll() -> None:
    asked = time.monotonic() + 1.0
    started = time.monotonic()
    outcome = run_in_child(
        sleep_for,
        (60,),
        should_stop=lambda: "the evaluation is CANCELLED" if time.monotonic() > asked else None,
        time_limit_s=120,
        poll_s=0.1,
    )
    assert outcome.stopped == "the evaluation is CANCELLED"
    # Starting takes a moment; ending it must not wait for the 60 s of "measurement".
    assert time.monotonic() - started < 15


def test_the_time_limit_ends_the_child() -> None:
    outcome = run_in_child(sleep_for, (60,), should_stop=never_stop, time_limit_s=1, poll_s=0.1)
    assert outcome.stopped is not None and "time limit of 1 s" in outcome.stopped


def test_an_error_in_the_child_is_reported_with_its_type() -> None:
    outcome = run_in_child(raise_error, (), should_stop=never_stop, time_limit_s=60)
    assert outcome.error == "RuntimeError: the backend broke"


def test_a_killed_child_is_a_failed_run_and_says_how_it_died() -> None:
    outcome = run_in_child(killed_by_the_kernel, (), should_stop=never_stop, time_limit_s=60)
    assert outcome.error is not None
    assert "killed by SIGKILL" in outcome.error and "out-of-memory" in outcome.error


def write_pid_then_sleep(path: str) -> None:
    with open(path, "w") as out:
        out.write(str(os.getpid()))
    time.sleep(60)


def test_a_killed_worker_takes_its_measurement_child_with_it(tmp_path: Path) -> None:
    # The "worker": a process that runs a measurement child, then is killed with -9.
    pid_file = tmp_path / "child.pid"
    worker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from services.inference.isolated import run_in_child\n"
            "from tests.services.inference.test_isolated import write_pid_then_sleep\n"
            f"run_in_child(write_pid_then_sleep, ({str(pid_file)!r},),"
            " should_stop=lambda: None, time_limit_s=120)\n",
        ],
        cwd=Path(__file__).resolve().parents[3],
    )
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the measurement child never started"
        time.sleep(0.1)
    child = int(pid_file.read_text())
    worker.kill()
    worker.wait()
    deadline = time.monotonic() + 5
    while pid_alive(child):
        assert time.monotonic() < deadline, "the orphaned measurement kept running"
        time.sleep(0.1)


def hold_memory(megabytes: int) -> None:
    block = bytearray(megabytes * 2**20)  # touched: resident, not just reserved
    for offset in range(0, len(block), 4096):
        block[offset] = 1
    time.sleep(60)


def test_a_run_over_its_memory_limit_is_ended_with_that_reason() -> None:
    outcome = run_in_child(
        hold_memory,
        (400,),
        should_stop=never_stop,
        time_limit_s=120,
        poll_s=0.1,
        memory_limit_bytes=200 * 2**20,
    )
    assert outcome.error is not None and "over its memory limit of 200 MiB" in outcome.error
