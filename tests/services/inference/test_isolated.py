"""A measurement in a child process: its value comes back, a cancel or a time limit ends
it at once, and a crash of the child is a failed run, not a dead worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.inference.isolated import end_resident, run_in_child
from shared.processes import pid_alive

# Each behaviour holds for a per-run child and for the worker's resident child alike.
BOTH = pytest.mark.parametrize("resident", [False, True], ids=["per-run", "resident"])


@pytest.fixture(autouse=True)
def _no_resident_left() -> Iterator[None]:
    yield
    end_resident()


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

    return os.environ.get(name), os.getcwd(), "services.tasks.inference" in sys.modules


@BOTH
def test_the_value_comes_back_from_another_process(resident: bool) -> None:
    outcome = run_in_child(answer, (7,), should_stop=never_stop, time_limit_s=60, resident=resident)
    assert outcome.ok and outcome.value["value"] == 7
    assert outcome.value["pid"] != os.getpid()


@BOTH
def test_the_child_sees_the_worker_as_it_is_at_the_run_not_at_the_fork_servers_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resident: bool
) -> None:
    # The server (and the resident child) are up before the worker changes.
    run_in_child(answer, (1,), should_stop=never_stop, time_limit_s=60, resident=resident)
    monkeypatch.setenv("BENCHSTACK_ISOLATED_PROBE", "set after the server started")
    monkeypatch.chdir(tmp_path)
    outcome = run_in_child(
        surroundings,
        ("BENCHSTACK_ISOLATED_PROBE",),
        should_stop=never_stop,
        time_limit_s=60,
        resident=resident,
    )
    probe, cwd, preloaded = outcome.value
    assert probe == "set after the server started"
    assert Path(cwd) == tmp_path
    # The measurement's modules come imported from the fork server, not imported per run.
    assert preloaded


@BOTH
def test_a_cancel_ends_the_child_within_a_poll(resident: bool) -> None:
    asked = time.monotonic() + 1.0
    started = time.monotonic()
    outcome = run_in_child(
        sleep_for,
        (60,),
        should_stop=lambda: "the evaluation is CANCELLED" if time.monotonic() > asked else None,
        time_limit_s=120,
        poll_s=0.1,
        resident=resident,
    )
    assert outcome.stopped == "the evaluation is CANCELLED"
    # Starting takes a moment; ending it must not wait for the 60 s of "measurement".
    assert time.monotonic() - started < 15


@BOTH
def test_the_time_limit_ends_the_child(resident: bool) -> None:
    outcome = run_in_child(
        sleep_for, (60,), should_stop=never_stop, time_limit_s=1, poll_s=0.1, resident=resident
    )
    assert outcome.stopped is not None and "time limit of 1 s" in outcome.stopped


@BOTH
def test_an_error_in_the_child_is_reported_with_its_type(resident: bool) -> None:
    outcome = run_in_child(
        raise_error, (), should_stop=never_stop, time_limit_s=60, resident=resident
    )
    assert outcome.error == "RuntimeError: the backend broke"


@BOTH
def test_a_killed_child_is_a_failed_run_and_says_how_it_died(resident: bool) -> None:
    outcome = run_in_child(
        killed_by_the_kernel, (), should_stop=never_stop, time_limit_s=60, resident=resident
    )
    assert outcome.error is not None
    assert "killed by SIGKILL" in outcome.error and "out-of-memory" in outcome.error
    assert outcome.died  # measured again by the task, as a killed worker's run is


def write_pid_then_sleep(path: str) -> None:
    with open(path, "w") as out:
        out.write(str(os.getpid()))
    time.sleep(60)


@BOTH
def test_a_killed_worker_takes_its_measurement_child_with_it(
    tmp_path: Path, resident: bool
) -> None:
    # The "worker": a process that runs a measurement child, then is killed with -9.
    pid_file = tmp_path / "child.pid"
    worker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from services.inference.isolated import run_in_child\n"
            "from tests.services.inference.test_isolated import write_pid_then_sleep\n"
            f"run_in_child(write_pid_then_sleep, ({str(pid_file)!r},),"
            f" should_stop=lambda: None, time_limit_s=120, resident={resident})\n",
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


@BOTH
def test_a_run_over_its_memory_limit_is_ended_with_that_reason(resident: bool) -> None:
    outcome = run_in_child(
        hold_memory,
        (400,),
        should_stop=never_stop,
        time_limit_s=120,
        poll_s=0.1,
        memory_limit_bytes=200 * 2**20,
        resident=resident,
    )
    assert outcome.error is not None and "over its memory limit of 200 MiB" in outcome.error


def resident_pid() -> int:
    outcome = run_in_child(answer, (0,), should_stop=never_stop, time_limit_s=60, resident=True)
    assert outcome.ok, outcome
    return int(outcome.value["pid"])


def test_the_resident_child_serves_run_after_run_and_survives_a_run_that_raises() -> None:
    first = resident_pid()
    assert resident_pid() == first
    assert (
        run_in_child(raise_error, (), should_stop=never_stop, time_limit_s=60, resident=True).error
        == "RuntimeError: the backend broke"
    )
    # An exception is an answer: what the resident child keeps loaded stays.
    assert resident_pid() == first


def test_a_stopped_or_killed_run_ends_the_resident_child_and_the_next_gets_a_new_one() -> None:
    first = resident_pid()
    stopped = run_in_child(
        sleep_for, (60,), should_stop=never_stop, time_limit_s=1, poll_s=0.1, resident=True
    )
    assert stopped.stopped is not None
    # Never reused mid-measurement: it was ended, not left running.
    assert not pid_alive(first)
    second = resident_pid()
    assert second != first
    assert run_in_child(
        killed_by_the_kernel, (), should_stop=never_stop, time_limit_s=60, resident=True
    ).error
    assert resident_pid() not in (first, second)


def test_a_run_under_another_environment_gets_a_fresh_resident_child(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = resident_pid()
    # Settings, clients and engines are cached in the child from its first run: a worker
    # whose environment changed must not be served by it.
    monkeypatch.setenv("BENCHSTACK_ISOLATED_PROBE", "changed")
    assert resident_pid() != first


def object_store_down() -> None:
    from shared.storage import ObjectStoreUnavailable

    raise ObjectStoreUnavailable("cannot connect to s3:9000: connection refused")


@BOTH
def test_an_object_store_outage_comes_back_as_transient(resident: bool) -> None:
    outcome = run_in_child(
        object_store_down, (), should_stop=never_stop, time_limit_s=60, resident=resident
    )
    assert outcome.transient and outcome.error == "cannot connect to s3:9000: connection refused"
