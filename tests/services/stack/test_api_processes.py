"""Several API processes on one port: each listens on its own socket, a dead one is
replaced, and SIGTERM to the supervisor stops them all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from services.stack.api_processes import reuse_port_socket, serve_processes
from tests.support.ephemeral import free_port

REPO = Path(__file__).resolve().parents[3]


def _listeners(supervisor: psutil.Process, port: int) -> set[int]:
    """Pids of the supervisor's children that listen on the port."""
    pids = set()
    for child in supervisor.children():
        try:
            connections = child.net_connections(kind="tcp")
        except psutil.NoSuchProcess:
            continue
        if any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in connections):
            pids.add(child.pid)
    return pids


def _wait_for(condition: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout:.0f} s: {what}")


@pytest.fixture
def api_processes(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    port = free_port()
    env = dict(
        os.environ,
        # /healthz needs no database; an embedded SQLite file keeps the test self-contained.
        BENCHSTACK_DATABASE_URL=f"sqlite:///{tmp_path / 'api.db'}",
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path),
    )
    command = ["-m", "services.stack.entry", "api", "--port", str(port), "--workers", "2"]
    process = subprocess.Popen(
        [sys.executable, *command],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield process, port
    finally:
        if process.poll() is None:
            process.kill()
            for child in psutil.Process(process.pid).children():
                child.kill()
            process.wait()


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


def test_each_process_listens_and_a_dead_one_is_replaced(
    api_processes: tuple[subprocess.Popen[bytes], int],
) -> None:
    process, port = api_processes
    supervisor = psutil.Process(process.pid)
    _wait_for(lambda: len(_listeners(supervisor, port)) == 2, 90, "two processes listening")
    # A process listens before its app has started; on a busy machine that takes seconds.
    _wait_for(lambda: _healthy(port), 60, "an answer to /healthz")

    first, _ = sorted(_listeners(supervisor, port))
    os.kill(first, signal.SIGKILL)
    _wait_for(
        lambda: (
            (listening := _listeners(supervisor, port))
            and len(listening) == 2
            and first not in listening
        ),
        90,
        "a replacement process listening",
    )
    _wait_for(lambda: _healthy(port), 60, "an answer to /healthz after the replacement")

    children = supervisor.children()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    _, alive = psutil.wait_procs(children, timeout=5)
    assert alive == [], f"left running after SIGTERM: {[p.pid for p in alive]}"


def test_port_zero_is_refused() -> None:
    # Each process would bind its own random port: clients could reach only one of them.
    with pytest.raises(ValueError, match="port"):
        serve_processes("127.0.0.1", 0, 2, access_log=False)


def test_two_sockets_share_one_port() -> None:
    port = free_port()
    first = reuse_port_socket("127.0.0.1", port)
    second = reuse_port_socket("127.0.0.1", port)
    try:
        assert first.getsockname()[1] == second.getsockname()[1] == port
    finally:
        first.close()
        second.close()
