"""``benchstack up`` / ``down``: start every service as a local process, stop them cleanly.

Each service runs in its own session (process group), so Ctrl-C in the terminal reaches
only ``up``, which then stops the services in order: SIGTERM to each group (Celery's warm
shutdown lets a running task finish), SIGKILL for whatever is left after the grace period.
A pid file under ``data_dir/stack`` lets ``benchstack down`` from another terminal do the same.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from shared.processes import pid_alive

ENTRY_MODULE = "services.stack.entry"
READY_FILE_ENV = "BENCHSTACK_READY_FILE"  # read by services.stack.entry.announce_ready


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    argv: list[str]


@dataclass(frozen=True)
class RunningService:
    name: str
    pid: int
    log: str


def default_services(
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    frameworks: list[str] | None = None,
    device: str = "cpu",
    threads: int | list[int] = 0,
    preprocess_concurrency: int | None = None,
) -> list[ServiceSpec]:
    """The API and every worker; one inference agent per entry of ``threads`` (a list of
    several starts several agents on this machine, e.g. to compare thread counts)."""
    base = [sys.executable, "-m", ENTRY_MODULE]
    agents = []
    for index, count in enumerate(threads if isinstance(threads, list) else [threads]):
        inference = [*base, "worker", "inference", "--device", device]
        for framework in frameworks or []:
            inference += ["--framework", framework]
        if count:
            inference += ["--threads", str(count)]
        agents.append(
            ServiceSpec("inference" if index == 0 else f"inference-{index + 1}", inference)
        )
    preprocess = [*base, "worker", "preprocess"]
    if preprocess_concurrency:
        preprocess += ["--concurrency", str(preprocess_concurrency)]
    return [
        ServiceSpec("api", [*base, "api", "--host", host, "--port", str(port)]),
        ServiceSpec("scheduler", [*base, "worker", "scheduler"]),
        ServiceSpec("preprocess", preprocess),
        *agents,
        ServiceSpec("aggregator", [*base, "worker", "aggregator"]),
    ]


def _is_ours(pid: int) -> bool:
    """Guard against a recycled pid: only signal processes that run our entry module."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return pid_alive(pid)  # no /proc (macOS): trust the pid file
    return ENTRY_MODULE.encode() in cmdline


class Stack:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.log_dir = data_dir / "logs"
        self.pid_file = data_dir / "stack" / "pids.json"
        # Workers announce here that they consume (services.stack.readiness).
        self.ready_dir = data_dir / "stack" / "ready"
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    def recorded(self) -> list[RunningService]:
        """Every service the pid file names, alive or not."""
        if not self.pid_file.exists():
            return []
        return [RunningService(**e) for e in json.loads(self.pid_file.read_text())]

    def running(self) -> list[RunningService]:
        return [e for e in self.recorded() if pid_alive(e.pid) and _is_ours(e.pid)]

    def dead(self) -> list[RunningService]:
        """Services the pid file names that are no longer running (they died on their own)."""
        alive = {s.pid for s in self.running()}
        return [e for e in self.recorded() if e.pid not in alive]

    def exit_code(self, service: RunningService) -> int | None:
        """A child's exit code once it exited; for a service another process started,
        -1 once it is gone (its code is not ours to read)."""
        child = self._children.get(service.pid)
        if child is not None:
            return child.poll()
        return None if pid_alive(service.pid) else -1

    def start(
        self, specs: list[ServiceSpec], env: dict[str, str] | None = None
    ) -> list[RunningService]:
        if self.running():
            names = ", ".join(s.name for s in self.running())
            raise RuntimeError(f"the stack is already running ({names}); `benchstack down` first")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        self.ready_dir.mkdir(parents=True, exist_ok=True)
        for stale in self.ready_dir.glob("*.json"):
            stale.unlink()
        started: list[RunningService] = []
        for spec in specs:
            log_path = self.log_dir / f"{spec.name}.log"
            ready = {READY_FILE_ENV: str(self.ready_dir / f"{spec.name}.json")}
            with log_path.open("ab") as log:
                process = subprocess.Popen(
                    spec.argv,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    env={**os.environ, **(env or {}), **ready},
                )
            self._children[process.pid] = process
            started.append(RunningService(spec.name, process.pid, str(log_path)))
        self.pid_file.write_text(json.dumps([asdict(s) for s in started], indent=2))
        return started

    def _reap(self) -> None:
        for pid, process in list(self._children.items()):
            if process.poll() is not None:
                del self._children[pid]

    def stop(self, *, grace_s: float = 15.0) -> list[str]:
        """Stop every service; returns the names of those that needed SIGKILL."""
        services = self.running()
        for service in services:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(service.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            self._reap()
            if not any(pid_alive(s.pid) for s in services):
                break
            time.sleep(0.1)
        killed = []
        for service in services:
            if pid_alive(service.pid):
                killed.append(service.name)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(service.pid, signal.SIGKILL)
        self._reap()
        with contextlib.suppress(FileNotFoundError):
            self.pid_file.unlink()
        return killed

    def watch(self, on_exit: Callable[[RunningService, int], None], poll_s: float = 0.5) -> None:
        """Block until interrupted or stopped (`benchstack down` removes the pid file),
        reporting any service that exits on its own."""
        reported: set[int] = set()
        while self.pid_file.exists():
            for service in self.running_children():
                code = self._children[service.pid].poll()
                if code is not None and service.pid not in reported:
                    reported.add(service.pid)
                    on_exit(service, code)
            time.sleep(poll_s)

    def running_children(self) -> list[RunningService]:
        if not self.pid_file.exists():
            return []
        entries = [RunningService(**e) for e in json.loads(self.pid_file.read_text())]
        return [e for e in entries if e.pid in self._children]


def wait_for_http(url: str, *, timeout_s: float = 60.0) -> bool:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2.0).status_code == 200:
                return True
        time.sleep(0.2)
    return False
