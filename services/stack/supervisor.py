"""Keeping the local stack up: start again a service that exits on its own.

`benchstack up` starts each service once, but a worker can still end later: the kernel's
out-of-memory killer, a bug, a broker loss Celery calls unrecoverable. Its queue then waits
for ever. The supervisor starts a dead service again with the command line it was started
with, appending to the same log, after a delay that doubles while it keeps dying young. A
service that dies within ``stable_s`` of each of ``max_quick_restarts`` restarts in a row
is left down and marked so in the pid file: a crash loop is a bug to read in the log, and
restarting it for ever would only hide it.

The `up` process that started the services supervises them, in the foreground or, with
`-d`, left behind in the background (services/stack/detach.py), so every service is its
child and its exit code is known. It is recorded in ``stack/supervisor.json``, and `down`
stops it before the services (``Stack.stop``); on that SIGTERM it stops them itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from services.stack.manager import RunningService, Stack
from services.stack.readiness import log_tail
from shared.processes import exit_text

POLL_S = 0.5
# How long a dead service's exit status may take to arrive: a process killed with torch's
# thread pools and a few GB mapped exits thread by thread, seconds on a loaded host.
EXIT_STATUS_WAIT_S = 10.0
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RestartPolicy:
    first_delay_s: float = 1.0
    max_delay_s: float = 30.0
    # A service that ran this long had recovered: its next death starts the count again.
    stable_s: float = 60.0
    max_quick_restarts: int = 5

    def delay_s(self, quick_deaths: int) -> float:
        """1, 2, 4 ... seconds before the restart that follows the n-th quick death."""
        return min(self.max_delay_s, self.first_delay_s * 2 ** max(quick_deaths - 1, 0))


@dataclass(frozen=True)
class Event:
    """Something the supervisor did, for `up` to print or the supervisor log to keep."""

    service: str
    text: str
    log_tail: str = ""  # the dead service's last log lines, with its death


def duration_text(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class StackSupervisor:
    def __init__(
        self,
        stack: Stack,
        report: Callable[[Event], None],
        policy: RestartPolicy | None = None,
        *,
        restart: bool = True,
    ) -> None:
        self.stack = stack
        self.report = report
        self.policy = policy or RestartPolicy()
        self.restarts = restart  # False: only report deaths (`up --no-restart`)
        self._quick_deaths: dict[str, int] = {}
        self._restart_due: dict[str, float] = {}  # service name -> time.monotonic()

    def poll(self) -> None:
        """Look at every recorded service once: note a new death, restart one whose delay
        has passed, give up on a crash loop."""
        for service in self.stack.recorded():
            if service.gave_up or self.stack.is_running(service):
                continue
            due = self._restart_due.get(service.name)
            if due is None:
                self._died(service)
            elif time.monotonic() >= due:
                del self._restart_due[service.name]
                self._restart(service)

    def _died(self, service: RunningService) -> None:
        code = self.stack.child_exit_code(service, wait_s=EXIT_STATUS_WAIT_S)
        # None for a service this process did not start (a stack recorded by another `up`).
        how = "exited" if code is None else exit_text(code)
        lived_s = time.time() - service.started_at if service.started_at else 0.0
        if lived_s >= self.policy.stable_s:
            quick = 0
        else:
            quick = self._quick_deaths.get(service.name, 0) + 1
        self._quick_deaths[service.name] = quick
        tail = log_tail(service.log)
        lived = duration_text(lived_s)
        when = datetime.now(UTC).strftime("%H:%M:%S UTC")
        died = f"{service.name} {how} after {lived}"
        if not self.restarts:
            gave_up = "not restarted: `up --no-restart`"
        elif not service.argv:
            gave_up = (
                "not restarted: its command line is not recorded (started by an older benchstack)"
            )
        elif quick > self.policy.max_quick_restarts:
            gave_up = (
                f"left down: died within {duration_text(self.policy.stable_s)} of each of its "
                f"last {self.policy.max_quick_restarts} restarts"
            )
        else:
            gave_up = ""
        # One write of the pid file: how it ended, and whether it stays down.
        self.stack.update(
            replace(service, last_exit=f"{how} after {lived} at {when}", gave_up=gave_up)
        )
        if gave_up:
            self.report(Event(service.name, f"{died}; {gave_up}", tail))
            return
        delay = self.policy.delay_s(quick)
        self._restart_due[service.name] = time.monotonic() + delay
        self.report(Event(service.name, f"{died}; restarting in {delay:g} s", tail))

    def _restart(self, service: RunningService) -> None:
        when = datetime.now(UTC).isoformat(timespec="seconds")
        try:
            restarted = self.stack.restart(
                service, f"restart {service.restarts + 1} by the supervisor at {when}"
            )
        except OSError as exc:  # its interpreter or log folder is gone: say so, keep the rest
            why = f"could not be restarted: {exc}"
            self.stack.update(replace(service, gave_up=why))
            self.report(Event(service.name, f"{service.name} {why}"))
            return
        except RuntimeError as exc:  # its entry went meanwhile (`down`): nothing to keep up
            self.report(Event(service.name, f"{service.name} not restarted: {exc}"))
            return
        self.report(
            Event(
                service.name,
                f"restarted {service.name}, pid {restarted.pid} (restart {restarted.restarts})",
            )
        )

    def run(self, stopping: Callable[[], bool], poll_s: float = POLL_S) -> None:
        """Supervise until ``stopping()`` (a flag a signal handler sets: nothing that takes
        a lock there) or until the stack's pid file is gone (`down`). One poll that fails
        (a full disk refusing the pid file) is reported and the next one tried: the
        supervisor is what keeps the rest alive, so it must not be the first to go."""
        while not stopping() and self.stack.pid_file.exists():
            try:
                self.poll()
            except Exception as exc:
                log.exception("supervisor: a pass over the services failed")
                self.report(Event("supervisor", f"supervisor: a pass failed ({exc}); going on"))
            deadline = time.monotonic() + poll_s
            while not stopping() and time.monotonic() < deadline:
                time.sleep(min(0.05, poll_s))
