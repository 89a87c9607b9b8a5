"""The supervisor starts again a service that exits, gives up on a crash loop, and never
restarts what `down` stops. Real processes throughout."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from services.stack.manager import ENTRY_MODULE, RunningService, ServiceSpec, Stack
from services.stack.supervisor import Event, RestartPolicy, StackSupervisor
from shared.processes import pid_alive, start_ticks

FAST = RestartPolicy(first_delay_s=0.05, max_delay_s=0.2, stable_s=60, max_quick_restarts=2)


def _service(name: str, code: str) -> ServiceSpec:
    # The entry module's name in argv marks the process as ours for the pid-file guard.
    return ServiceSpec(name, [sys.executable, "-c", code, ENTRY_MODULE])


def _fails_once(marker: Path) -> ServiceSpec:
    """Exits with code 3 the first time, then runs until stopped."""
    code = (
        "import pathlib, sys, time\n"
        f"marker = pathlib.Path({str(marker)!r})\n"
        "if not marker.exists():\n"
        "    marker.touch(); print('first start: failing', flush=True); sys.exit(3)\n"
        "print('second start: serving', flush=True); time.sleep(60)\n"
    )
    return _service("flaky", code)


def _sleeper(name: str) -> ServiceSpec:
    return _service(name, "import time\nprint('serving', flush=True)\ntime.sleep(60)\n")


def _until(check: Callable[[], bool], step: Callable[[], None], timeout_s: float = 15) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        step()
        time.sleep(0.05)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    stack = Stack(tmp_path)
    yield stack
    stack.stop(grace_s=2)


def _entry(stack: Stack, name: str) -> RunningService:
    return next(s for s in stack.recorded() if s.name == name)


def test_a_service_that_exits_is_started_again(stack: Stack, tmp_path: Path) -> None:
    events: list[Event] = []
    stack.start([_fails_once(tmp_path / "marker"), _sleeper("steady")])
    first_pid = _entry(stack, "flaky").pid
    supervisor = StackSupervisor(stack, events.append, FAST)
    _until(lambda: _entry(stack, "flaky").restarts == 1, supervisor.poll)
    restarted = _entry(stack, "flaky")
    assert restarted.pid != first_pid and stack.is_running(restarted)
    assert restarted.argv == _fails_once(tmp_path / "marker").argv
    assert re.match(r"exited with code 3 after \d+ s at \d\d:\d\d:\d\d UTC$", restarted.last_exit)
    assert re.match(r"flaky exited with code 3 after \d+ s; restarting in 0.05 s", events[0].text)
    assert "first start: failing" in events[0].log_tail
    assert events[1].text == f"restarted flaky, pid {restarted.pid} (restart 1)"
    _until(lambda: "second start" in Path(restarted.log).read_text(), lambda: None)
    log = Path(restarted.log).read_text()
    assert (
        log.index("first start")
        < log.index("restart 1 by the supervisor")
        < log.index("second start")
    )
    assert _entry(stack, "steady").restarts == 0  # the others are left alone


def test_a_service_whose_threads_outlive_its_main_thread_is_reported_with_its_code(
    stack: Stack,
) -> None:
    # A multithreaded worker killed by a signal: its main thread is a zombie (not running)
    # before its other threads have gone, and its status arrives only after the last one.
    # CI once saw "exited after 15 s" for a worker it had killed with SIGKILL.
    code = (
        "import ctypes, os, threading, time\n"
        "def last_thread():\n"
        "    time.sleep(1.0)\n"
        "    os._exit(5)\n"
        "threading.Thread(target=last_thread).start()\n"
        "ctypes.CDLL(None).pthread_exit(None)  # the main thread ends; the process goes on\n"
    )
    events: list[Event] = []
    stack.start([_service("threads", code)])
    first = _entry(stack, "threads")
    _until(lambda: not stack.is_running(first), lambda: None)
    assert stack.child_exit_code(first) is None, "its status must not be there yet"
    supervisor = StackSupervisor(stack, events.append, FAST)
    supervisor.poll()
    assert re.match(r"exited with code 5 after \d+ s at ", _entry(stack, "threads").last_exit)
    assert re.match(r"threads exited with code 5 after \d+ s; restarting", events[0].text)


def test_a_crash_loop_is_left_down_and_says_why(stack: Stack) -> None:
    events: list[Event] = []
    stack.start([_service("broken", "import sys\nprint('bad config', flush=True)\nsys.exit(2)\n")])
    supervisor = StackSupervisor(stack, events.append, FAST)
    _until(lambda: bool(_entry(stack, "broken").gave_up), supervisor.poll)
    broken = _entry(stack, "broken")
    assert broken.restarts == FAST.max_quick_restarts
    assert broken.gave_up == "left down: died within 60 s of each of its last 2 restarts"
    assert "bad config" in events[-1].log_tail
    supervisor.poll()  # nothing more happens to it
    time.sleep(0.3)
    supervisor.poll()
    assert _entry(stack, "broken").restarts == FAST.max_quick_restarts


def test_the_delay_doubles_while_it_dies_young() -> None:
    policy = RestartPolicy(first_delay_s=1, max_delay_s=5)
    assert [policy.delay_s(n) for n in range(6)] == [1, 1, 2, 4, 5, 5]


def test_a_service_that_had_recovered_starts_its_count_again(stack: Stack) -> None:
    events: list[Event] = []
    stack.start([_service("short", "import sys\nsys.exit(1)\n")])
    policy = RestartPolicy(first_delay_s=0.01, stable_s=60, max_quick_restarts=1)
    supervisor = StackSupervisor(stack, events.append, policy)
    _until(lambda: _entry(stack, "short").restarts == 1, supervisor.poll)  # one quick death
    # As if the restarted process had run for 1000 s before dying: its death is not quick
    # and the count starts again, so the next quick death is restarted, not given up on.
    stack.update(replace(_entry(stack, "short"), started_at=time.time() - 1000))
    _until(lambda: _entry(stack, "short").restarts == 2, supervisor.poll)
    assert re.match(r"short exited with code 1 after \d+ min; restarting", events[-2].text)
    _until(lambda: _entry(stack, "short").restarts == 3, supervisor.poll)
    assert not _entry(stack, "short").gave_up
    _until(lambda: bool(_entry(stack, "short").gave_up), supervisor.poll)  # two quick ones
    assert _entry(stack, "short").restarts == 3


def test_no_restart_only_reports(stack: Stack) -> None:
    events: list[Event] = []
    stack.start([_service("once", "import sys\nsys.exit(4)\n")])
    supervisor = StackSupervisor(stack, events.append, FAST, restart=False)
    _until(lambda: bool(_entry(stack, "once").gave_up), supervisor.poll)
    assert _entry(stack, "once").restarts == 0
    assert events[0].text.endswith("not restarted: `up --no-restart`")


def _stand_in_supervisor(stack: Stack, note: Path | None = None) -> subprocess.Popen[bytes]:
    """A process recorded as the supervisor, as `up` records itself. With ``note``, on
    SIGTERM it writes there whether the services were still running."""
    code = "import time\n"
    if note is not None:
        pids = [s.pid for s in stack.recorded()]
        code = (
            "import os, signal, sys, time\n"
            "def term(*_):\n"
            f"    alive = [os.path.exists(f'/proc/{{p}}') for p in {pids!r}]\n"
            f"    open({str(note)!r}, 'w').write(str(all(alive)))\n"
            "    sys.exit(0)\n"
            "signal.signal(signal.SIGTERM, term)\n"
            f"open({str(note)!r} + '.ready', 'w').close()\n"
        )
    code += "time.sleep(60)\n"
    process = subprocess.Popen([sys.executable, "-c", code])
    command = "\0".join([sys.executable, "-c", code]) + "\0"
    stack.claim_supervision(process.pid, command)
    if note is not None:  # its handler is in before it is signalled
        _until(Path(f"{note}.ready").exists, lambda: None)
    return process


def test_down_stops_the_supervisor_before_the_services(stack: Stack, tmp_path: Path) -> None:
    stack.start([_sleeper("worker")])
    note = tmp_path / "services-at-sigterm"
    supervisor = _stand_in_supervisor(stack, note)
    assert stack.supervisor_pid() == supervisor.pid
    assert stack.stop(grace_s=5) == []
    assert supervisor.wait(timeout=5) == 0  # it handled the SIGTERM
    assert note.read_text() == "True"  # the services still ran when it was asked to stop
    assert stack.supervisor_pid() is None and not stack.pid_file.exists()
    assert not stack.supervisor_file.exists()


def test_run_ends_when_down_removed_the_pid_file(stack: Stack) -> None:
    stack.start([_sleeper("worker")])
    supervisor = StackSupervisor(stack, lambda _: None, FAST)
    runner = threading.Thread(target=supervisor.run, args=(lambda: False, 0.05))
    runner.start()
    stack.pid_file.unlink()
    runner.join(timeout=5)
    assert not runner.is_alive()


def test_a_recycled_supervisor_pid_is_not_stopped(stack: Stack) -> None:
    # The pid is this test's own process, recorded with another command line: it is not
    # the supervisor any more, and `down` must not signal it.
    stack.supervisor_file.parent.mkdir(parents=True)
    stack.claim_supervision(os.getpid(), "python -m services.stack.supervisor\0")
    assert stack.supervisor_pid() is None
    stack.stop_supervisor()
    assert not stack.supervisor_file.exists()


def test_a_service_that_cannot_be_started_again_is_left_down_with_the_error(
    stack: Stack, tmp_path: Path
) -> None:
    events: list[Event] = []
    gone = tmp_path / "venv-removed" / "python"
    stack.start([_service("once", "pass\n")])
    once = _entry(stack, "once")
    stack.update(replace(once, argv=[str(gone), "-c", "pass"]))  # as if its venv was deleted
    supervisor = StackSupervisor(stack, events.append, FAST)
    _until(lambda: bool(_entry(stack, "once").gave_up), supervisor.poll)
    assert _entry(stack, "once").gave_up.startswith("could not be restarted: [Errno 2]")
    assert events[-1].text.startswith("once could not be restarted: [Errno 2]")


def test_a_pass_that_fails_is_reported_and_the_next_one_runs(stack: Stack) -> None:
    events: list[Event] = []
    stack.start([_sleeper("worker")])
    good = stack.pid_file.read_text()
    stack.pid_file.write_text("{ not json")  # what a full disk could leave
    supervisor = StackSupervisor(stack, events.append, FAST)
    try:
        # Ends once three passes have failed: a failed pass did not end the loop.
        supervisor.run(lambda: len(events) >= 3, poll_s=0.01)
    finally:
        stack.pid_file.write_text(good)
    assert [e.service for e in events] == ["supervisor"] * 3
    assert events[0].text.startswith("supervisor: a pass failed (")


def test_a_restart_that_cannot_be_recorded_is_stopped_again(stack: Stack) -> None:
    (first,) = stack.start([_service("once", "pass\n")])
    _until(lambda: stack.child_exit_code(first) is not None, lambda: None)
    stack.record([])  # `down` removed it meanwhile
    with pytest.raises(RuntimeError, match="no longer in"):
        stack.restart(first, "restart 1")
    assert stack.running() == [] and not any(pid_alive(p) for p in stack._children)


def test_a_recycled_service_pid_is_not_running(stack: Stack) -> None:
    # Our own pid with another start time: the process recorded is gone, and whatever
    # runs under its pid now is not it, even with the entry module in its command line.
    mine = RunningService("worker", os.getpid(), "log", argv=["x"], start_ticks=1)
    assert not stack.is_running(mine)
    assert stack.is_running(replace(mine, start_ticks=start_ticks(os.getpid())))


def test_start_is_refused_while_a_supervisor_lives_even_with_every_service_down(
    stack: Stack,
) -> None:
    (gone,) = stack.start([_service("gone", "pass\n")])
    _until(lambda: stack.child_exit_code(gone) is not None, lambda: None)
    supervisor = _stand_in_supervisor(stack)
    with pytest.raises(
        RuntimeError, match=f"already running \\(supervisor pid {supervisor.pid}\\)"
    ):
        stack.start([_sleeper("fresh")])
    assert supervisor.poll() is None  # left alone: it is the running stack's
    stack.stop(grace_s=5)
    stack.start([_sleeper("fresh")])  # after `down`
    assert [s.name for s in stack.recorded()] == ["fresh"]
