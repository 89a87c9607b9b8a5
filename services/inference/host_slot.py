"""One measurement per host at a time.

Two agents on one machine measuring at once share its cores, caches and memory bandwidth:
each figure then describes the other's load as much as the model (two agents on this
2-core VM measured 11.1 and 25.1 samples/s side by side). So every measurement on a host,
stack agent or embedded ``bench``, first takes an exclusive ``flock`` on one file; the
kernel releases it when the holder dies, so a crashed run never blocks the host.

Every measurement also registers itself in an ``active/`` folder beside the lock, so a run
records whether another overlapped it: never when exclusive, and visibly when the user
explicitly allowed sharing (``BENCHSTACK_MEASURE_EXCLUSIVE=false``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from shared.allocator import Allocator, use_allocator
from shared.processes import pid_alive
from shared.settings import Settings

HISTORY_MAX_BYTES = 1 << 20


def _still_measuring(entry: dict[str, Any]) -> bool:
    """Whether the process that registered ``entry`` still runs. A process killed with -9
    leaves its entry behind, and the kernel gives its pid again in time: a process of that
    pid created after the entry was written is not the one that wrote it (a recycled pid
    once made a run report an overlap that never happened)."""
    import psutil

    pid = int(entry["pid"])
    if not pid_alive(pid):
        return False
    with contextlib.suppress(psutil.Error):
        return psutil.Process(pid).create_time() <= float(entry["started"]) + 1.0
    return True


class SlotWaitCancelled(RuntimeError):
    """The run was cancelled while it waited for the host."""


@dataclass
class HostUse:
    """How a run shared its host, stored with the run (report ``host``)."""

    exclusive: bool
    waited_s: float = 0.0
    overlapped_with: list[str] = field(default_factory=list)
    # How the measuring process's allocator was set (shared/allocator.py); {} if unset.
    allocator: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "allocator": self.allocator,
            "exclusive": self.exclusive,
            "waited_for_host_s": round(self.waited_s, 3),
            "overlapped": bool(self.overlapped_with),
            "overlapped_with": sorted(set(self.overlapped_with)),
        }


class HostSlot:
    def __init__(
        self,
        folder: Path,
        *,
        exclusive: bool = True,
        allocator: Allocator | None = None,
        on_wait: Callable[[list[str]], None] | None = None,
    ) -> None:
        """``on_wait(holders)``: called once when a measurement finds the host taken and
        starts waiting, with the runs then measuring (so a worker can say why its RUNNING
        evaluation has not started). ``allocator``: set in the measuring process (the
        one that holds the slot) before each measurement, and recorded; None leaves it."""
        self.folder = folder
        self.exclusive = exclusive
        self.allocator = allocator
        self.active = folder / "active"
        self.on_wait = on_wait

    @classmethod
    def of(cls, settings: Settings, on_wait: Callable[[list[str]], None] | None = None) -> HostSlot:
        """The host's slot as the settings describe it: its folder, whether measurements
        take the host alone, and the allocator each measuring process uses."""
        return cls(
            settings.host_slot_dir,
            exclusive=settings.measure_exclusive,
            allocator=settings.allocator,
            on_wait=on_wait,
        )

    def _others(self, run_id: str) -> list[str]:
        others = []
        for entry in self.active.glob("*.json"):
            if entry.stem == run_id:
                continue
            with contextlib.suppress(OSError, ValueError, KeyError):
                if _still_measuring(json.loads(entry.read_text())):
                    others.append(entry.stem)
        return others

    def _record(self, run_id: str, started: float, ended: float) -> None:
        history = self.folder / "history.jsonl"
        with contextlib.suppress(OSError):
            if history.exists() and history.stat().st_size > HISTORY_MAX_BYTES:
                history.unlink()
            # One short line per O_APPEND write: concurrent writers do not interleave.
            with open(history, "a") as out:
                out.write(json.dumps({"run": run_id, "start": started, "end": ended}) + "\n")

    def _ended_within(self, run_id: str, started: float, ended: float) -> list[str]:
        history = self.folder / "history.jsonl"
        found = []
        with contextlib.suppress(OSError):
            for line in history.read_text().splitlines():
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    entry = json.loads(line)
                    if entry["run"] != run_id and entry["start"] < ended and entry["end"] > started:
                        found.append(str(entry["run"]))
        return found

    def _acquire(
        self,
        lock: TextIO,
        should_stop: Callable[[], bool],
        poll_s: float,
        mode: int,
        run_id: str,
    ) -> float:
        started = time.monotonic()
        told = False
        while True:
            try:
                fcntl.flock(lock, mode | fcntl.LOCK_NB)
                return time.monotonic() - started
            except BlockingIOError:
                if not told and self.on_wait is not None:
                    told = True
                    with contextlib.suppress(Exception):  # a notice never fails the run
                        self.on_wait(self._others(run_id))
                if should_stop():
                    raise SlotWaitCancelled("cancelled while waiting for the host") from None
                time.sleep(poll_s)

    @contextlib.contextmanager
    def measuring(
        self,
        run_id: str,
        *,
        should_stop: Callable[[], bool] = lambda: False,
        poll_s: float = 0.2,
        shared: bool = False,
    ) -> Iterator[HostUse]:
        """Hold the host (when exclusive) while the block measures ``run_id``.

        ``shared``: for the ranks of one data-parallel gang that land on one host, which
        must run at once (each waits for the others in the all-reduce): they hold the
        lock together (LOCK_SH), and a measurement that wants the host alone waits for
        all of them, as they wait for it. Their overlaps with one another are recorded."""
        self.active.mkdir(parents=True, exist_ok=True)
        use = HostUse(exclusive=self.exclusive and not shared)
        if self.allocator is not None:
            use.allocator = use_allocator(self.allocator)
        with open(self.folder / "measure.lock", "a+") as lock:
            if self.exclusive:
                mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
                use.waited_s = self._acquire(lock, should_stop, poll_s, mode, run_id)
            mine = self.active / f"{run_id}.json"
            started = time.time()
            mine.write_text(json.dumps({"pid": os.getpid(), "started": started}))
            try:
                use.overlapped_with += self._others(run_id)
                yield use
                use.overlapped_with += self._others(run_id)
                # Runs that started and ended while this one measured left only history.
                use.overlapped_with += self._ended_within(run_id, started, time.time())
            finally:
                mine.unlink(missing_ok=True)
                self._record(run_id, started, time.time())
                if self.exclusive:
                    fcntl.flock(lock, fcntl.LOCK_UN)
