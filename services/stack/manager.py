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
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from shared.processes import pid_alive, same_process, start_ticks

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
    # What the supervisor needs to start it again (empty in pid files of older versions).
    argv: list[str] = field(default_factory=list)
    started_at: float = 0.0  # time.time() of its latest start
    start_ticks: int | None = None  # shared.processes.start_ticks: which process the pid is
    restarts: int = 0
    last_exit: str = ""  # how it last ended on its own, e.g. "was killed by SIGKILL ..."
    gave_up: str = ""  # why the supervisor left it down, once it has


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
        # Who restarts dead services: a foreground `up`, or the process `up -d` leaves.
        self.supervisor_file = data_dir / "stack" / "supervisor.json"
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    def recorded(self) -> list[RunningService]:
        """Every service the pid file names, alive or not."""
        try:
            entries = json.loads(self.pid_file.read_text())
        except FileNotFoundError:
            return []
        return [RunningService(**e) for e in entries]

    def record(self, services: list[RunningService]) -> None:
        """Replace the pid file in one step, so a reader never sees half of it."""
        partial = self.pid_file.with_suffix(".tmp")
        partial.write_text(json.dumps([asdict(s) for s in services], indent=2))
        os.replace(partial, self.pid_file)

    def is_running(self, service: RunningService) -> bool:
        if not pid_alive(service.pid):
            return False
        if service.start_ticks is not None:  # exact, and blind to a rewritten command line
            return start_ticks(service.pid) == service.start_ticks
        return _is_ours(service.pid)  # a pid file of an older benchstack

    def running(self) -> list[RunningService]:
        return [e for e in self.recorded() if self.is_running(e)]

    def dead(self) -> list[RunningService]:
        """Services the pid file names that are no longer running (they died on their own)."""
        alive = {s.pid for s in self.running()}
        return [e for e in self.recorded() if e.pid not in alive]

    def exit_code(self, service: RunningService) -> int | None:
        """A child's exit code once it exited; for a service another process started,
        -1 once it is gone (its code is not ours to read)."""
        if service.pid in self._children:
            return self.child_exit_code(service)
        return None if pid_alive(service.pid) else -1

    def child_exit_code(self, service: RunningService, *, wait_s: float = 0.0) -> int | None:
        """The exit code of a service this process started, once it exited, waiting up to
        ``wait_s`` for it. The wait is for a multithreaded child killed by a signal: its
        main thread is a zombie (so it no longer counts as running) before its other
        threads have exited, and the kernel reports its status only after the last one."""
        child = self._children.get(service.pid)
        if child is None:
            return None
        try:
            return child.wait(timeout=wait_s)  # wait_s=0: one look, as poll()
        except subprocess.TimeoutExpired:
            return None

    def start(
        self, specs: list[ServiceSpec], env: dict[str, str] | None = None
    ) -> list[RunningService]:
        # A live supervisor is the `up` that owns the stack, even while every service is
        # down (restarting, or given up): it would restart them beside the new ones.
        supervisor = self.supervisor_pid()
        if self.running() or supervisor is not None:
            names = ", ".join(s.name for s in self.running()) or f"supervisor pid {supervisor}"
            raise RuntimeError(f"the stack is already running ({names}); `benchstack down` first")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        self.ready_dir.mkdir(parents=True, exist_ok=True)
        for stale in self.ready_dir.glob("*.json"):
            stale.unlink()
        started = [
            self._spawn(RunningService(spec.name, 0, "", argv=spec.argv), env) for spec in specs
        ]
        self.record(started)
        return started

    def _spawn(self, service: RunningService, env: dict[str, str] | None = None) -> RunningService:
        log_path = self.log_dir / f"{service.name}.log"
        ready = {READY_FILE_ENV: str(self.ready_dir / f"{service.name}.json")}
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                service.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env={**os.environ, **(env or {}), **ready},
            )
        self._children[process.pid] = process
        return replace(
            service,
            pid=process.pid,
            log=str(log_path),
            started_at=time.time(),
            start_ticks=start_ticks(process.pid),
        )

    def restart(self, service: RunningService, note: str) -> RunningService:
        """Start a dead service again with its recorded argv, appending to its log after
        ``note``; whatever its old process group left behind (a prefork child, a
        measurement child) is killed first, so it cannot hold the new one's resources.
        A process that could not be recorded (the entry or the whole pid file went: `down`)
        is stopped again, never left running unlisted."""
        if not pid_alive(service.pid):  # else its pid is another process's now, and its group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(service.pid, signal.SIGKILL)
        self._reap()
        with Path(service.log).open("a") as log:
            log.write(f"\n--- benchstack: {note} ---\n")
        restarted = self._spawn(replace(service, restarts=service.restarts + 1))
        try:
            recorded = self.update(restarted)
        except BaseException:
            self._kill_group(restarted.pid)
            raise
        if not recorded:
            self._kill_group(restarted.pid)
            raise RuntimeError(f"{service.name} is no longer in {self.pid_file}")
        return restarted

    def _kill_group(self, pid: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        child = self._children.pop(pid, None)
        if child is not None:
            child.wait()

    def update(self, service: RunningService) -> bool:
        """Replace the pid file's entry of the service by that name; False when the file
        or the entry is gone (nothing is written then)."""
        recorded = self.recorded()
        if not any(e.name == service.name for e in recorded):
            return False
        self.record([service if e.name == service.name else e for e in recorded])
        return True

    def claim_supervision(self, pid: int, command: str, *, restarts: bool = True) -> None:
        """Record who watches the services, for `down` to stop first (a supervisor left
        running would restart what `down` stops) and for `ps` to describe. ``command`` is
        its /proc command line; ``restarts`` False: it only reports (`up --no-restart`)."""
        entry = {"pid": pid, "command": command, "restarts": restarts}
        self.supervisor_file.write_text(json.dumps(entry))

    def _supervisor_entry(self) -> dict[str, Any] | None:
        """supervisor.json while the process it names runs (not one that got its pid)."""
        try:
            entry: dict[str, Any] = json.loads(self.supervisor_file.read_text())
        except (FileNotFoundError, ValueError):
            return None
        return entry if same_process(int(entry["pid"]), entry.get("command", "")) else None

    def supervisor_pid(self) -> int | None:
        """The recorded supervisor's pid while that very process runs."""
        entry = self._supervisor_entry()
        return None if entry is None else int(entry["pid"])

    def supervisor_restarts(self) -> bool | None:
        """Whether the running supervisor restarts dead services; None when none runs."""
        entry = self._supervisor_entry()
        return None if entry is None else bool(entry.get("restarts", True))

    def stop_supervisor(self, *, wait_s: float = 20.0) -> None:
        """Stop the supervisor and wait for it to end. A foreground `up` stops the stack
        itself on SIGTERM, which is why this waits longer than a service's grace."""
        pid = self.supervisor_pid()
        if pid is not None and pid != os.getpid():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + wait_s
            while pid_alive(pid) and time.monotonic() < deadline:
                self._reap()
                time.sleep(0.05)
            if pid_alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if pid != os.getpid():  # this process's own record goes at the end of its stop()
            with contextlib.suppress(FileNotFoundError):
                self.supervisor_file.unlink()

    def _reap(self) -> None:
        for pid, process in list(self._children.items()):
            if process.poll() is not None:
                del self._children[pid]

    def stop(self, *, grace_s: float = 15.0) -> list[str]:
        """Stop every service; returns the names of those that needed SIGKILL."""
        self.stop_supervisor(wait_s=grace_s + 5)
        services = self.running()
        # Processes this one started that the pid file does not list yet (interrupted
        # while starting them): stopped the same way, never left behind.
        listed = {s.pid for s in services}
        services += [
            RunningService("(starting)", pid, "")
            for pid, child in self._children.items()
            if pid not in listed and child.poll() is None
        ]
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
        for done in (self.pid_file, self.supervisor_file):
            with contextlib.suppress(FileNotFoundError):
                done.unlink()
        return killed


def wait_for_http(url: str, *, timeout_s: float = 60.0) -> bool:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2.0).status_code == 200:
                return True
        time.sleep(0.2)
    return False
