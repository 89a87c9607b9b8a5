"""The local stack's process manager: logs per service, pid file, clean stop."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from services.stack.manager import ENTRY_MODULE, ServiceSpec, Stack, default_services


def _sleeper(name: str, ignore_term: bool = False) -> ServiceSpec:
    code = "import signal, sys, time\n"
    if ignore_term:
        code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    code += "print('started', flush=True)\ntime.sleep(60)\n"
    # The entry module's name in argv marks the process as ours for the pid-file guard.
    return ServiceSpec(name, [sys.executable, "-c", code, ENTRY_MODULE])


def test_start_logs_and_stop(tmp_path: Path) -> None:
    stack = Stack(tmp_path)
    started = stack.start([_sleeper("one"), _sleeper("two")])
    assert [s.name for s in started] == ["one", "two"]
    assert {s.name for s in Stack(tmp_path).running()} == {"one", "two"}  # seen from elsewhere
    time.sleep(0.5)
    assert "started" in (tmp_path / "logs" / "one.log").read_text()
    assert stack.stop(grace_s=5) == []
    assert Stack(tmp_path).running() == []
    assert not stack.pid_file.exists()


def test_stop_kills_what_ignores_sigterm(tmp_path: Path) -> None:
    stack = Stack(tmp_path)
    stack.start([_sleeper("stubborn", ignore_term=True)])
    time.sleep(0.5)  # let it install its handler
    assert stack.stop(grace_s=0.5) == ["stubborn"]
    assert stack.running() == []


def test_refuses_to_start_twice(tmp_path: Path) -> None:
    stack = Stack(tmp_path)
    stack.start([_sleeper("one")])
    try:
        try:
            Stack(tmp_path).start([_sleeper("one")])
        except RuntimeError as exc:
            assert "already running" in str(exc)
        else:
            raise AssertionError("a second start must be refused")
    finally:
        stack.stop(grace_s=5)


def test_default_services_cover_api_and_every_worker() -> None:
    names = [s.name for s in default_services(frameworks=["null"])]
    assert names == ["api", "scheduler", "preprocess", "inference", "aggregator"]
