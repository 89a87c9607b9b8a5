"""`benchstack ps` as a user runs it, over real processes a Stack started."""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

from services.stack.manager import ENTRY_MODULE, ServiceSpec, Stack
from shared.processes import this_command_line
from tests.support.cli import benchstack


def _service(name: str, code: str) -> ServiceSpec:
    return ServiceSpec(name, [sys.executable, "-c", code, ENTRY_MODULE])


def _row(output: str, service: str) -> str:
    return next(line.strip() for line in output.splitlines() if line.strip().startswith(service))


def test_ps_without_a_stack(tmp_path: Path) -> None:
    result = benchstack(tmp_path, "ps")
    assert result.returncode == 1
    assert "no stack is running" in result.stdout


def test_ps_names_each_state_and_exits_1_while_one_is_down(tmp_path: Path) -> None:
    stack = Stack(tmp_path)
    serving, ended, broken = stack.start(
        [
            _service("serving", "import time\ntime.sleep(60)\n"),
            _service("ended", "pass\n"),
            _service("broken", "pass\n"),
        ]
    )
    try:
        stack.update(replace(broken, restarts=5, gave_up="left down: died within 60 s"))
        deadline = time.monotonic() + 10
        while stack.child_exit_code(ended) is None or stack.child_exit_code(broken) is None:
            assert time.monotonic() < deadline
            time.sleep(0.05)

        result = benchstack(tmp_path, "ps")
        assert result.returncode == 1, result.stdout
        assert re.match(
            rf"serving\s+running\s+{serving.pid}\s+\d+ s\s+0\s", _row(result.stdout, "serving")
        )
        assert "down (no supervisor)" in _row(result.stdout, "ended")
        assert "down: left down: died within 60 s" in _row(result.stdout, "broken")
        assert "no supervisor: a service that exits stays down" in result.stdout

        # This test process stands for the supervisor (a real one would restart "ended").
        stack.claim_supervision(os.getpid(), this_command_line())
        result = benchstack(tmp_path, "ps")
        assert "restarting" in _row(result.stdout, "ended"), result.stdout
        assert f"supervisor pid {os.getpid()}: restarts a service" in result.stdout

        stack.claim_supervision(os.getpid(), this_command_line(), restarts=False)
        result = benchstack(tmp_path, "ps")
        assert "down (`up --no-restart`)" in _row(result.stdout, "ended"), result.stdout
        assert "reports deaths only" in result.stdout
        stack.supervisor_file.unlink()  # so that stop() does not signal this process
    finally:
        stack.stop(grace_s=5)


def test_ps_at_80_columns_wraps_each_log_path_whole(tmp_path: Path) -> None:
    folder = tmp_path / "a-data-folder-whose-name-is-long-enough-to-need-wrapping"
    stack = Stack(folder)
    (serving,) = stack.start([_service("serving", "import time\ntime.sleep(60)\n")])
    try:
        result = benchstack(folder, "ps", columns=80)
        assert result.returncode == 0, result.stdout + result.stderr
        assert all(len(line) <= 80 for line in result.stdout.splitlines()), result.stdout
        assert "…" not in result.stdout, result.stdout  # rich's mark for a cut cell
        # The path's pieces, one a line in the last column, make the whole path again.
        assert str(serving.log) in "".join(result.stdout.split()), result.stdout
        assert len(str(serving.log)) > 80  # so that it had to wrap
        assert "left out" not in result.stdout, result.stdout
    finally:
        stack.stop(grace_s=5)
