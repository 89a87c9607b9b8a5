"""How much CPU other processes took on this machine while a run measured.

A figure measured while something else ran is a figure of a shared machine. The sampler
reads the kernel's CPU counters (/proc/stat) at the start and end of a run's window and
subtracts what this process and its children used in between; the rest is what other
processes (and, under a hypervisor, other guests: "steal") took from the CPUs this run
could use.

- Only the CPUs in this process's affinity set are counted: load on a CPU the run could
  never be scheduled on does not slow it down.
- Where /proc/stat cannot be read (macOS, a locked-down container) the CPU figures are
  None and the verdict falls back to the 1-minute load average (see ``verdict``).
- Not seen: a cgroup CPU quota shared with sibling containers. The kernel's counters are
  per CPU, so they see every process on the host, but a quota can throttle this run
  without any CPU looking busy.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import psutil

PROC_STAT = Path("/proc/stat")

# Other processes taking more than this share of the usable CPUs make the machine "busy".
# It matches the stability verdict's tolerance (services/core/stability.py, 10 %):
# a CPU-bound run that loses a tenth of the machine can move its throughput by as much
# as the spread a stable run is allowed, so its figures no longer tell the model's speed
# from the neighbour's. Below it sit the daemons every machine runs (a few percent).
BUSY_SHARE = 0.10

# /proc/stat columns after the CPU name: user nice system idle iowait irq softirq steal
# guest guest_nice. Busy = every column but idle and iowait (a CPU waiting on I/O is free
# to run us). guest and guest_nice are already counted inside user and nice.
_BUSY_COLUMNS = (0, 1, 2, 5, 6, 7)


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity set), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class HostLoad:
    """CPU used by other processes during one window, and whether that made it busy.

    CPU figures are CPU-seconds; None where the machine does not expose them.
    """

    wall_s: float
    usable_cpus: int
    # Every process's busy time on the usable CPUs, this one's included.
    total_cpu_s: float | None
    # This process, its threads and its children (finished or still running).
    own_cpu_s: float
    other_cpu_s: float | None
    # other_cpu_s / (wall_s * usable_cpus): 1.0 means others kept every usable CPU busy.
    other_cpu_share: float | None
    load_1m_start: float | None
    load_1m_end: float | None
    busy: bool | None  # None: nothing could be measured
    reason: str
    busy_share_threshold: float = BUSY_SHARE

    @property
    def other_cpus(self) -> float | None:
        """Other processes' CPU-seconds per second: how many CPUs they kept busy on average."""
        if self.other_cpu_s is None or self.wall_s <= 0:
            return None
        return self.other_cpu_s / self.wall_s

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HostLoad:
        return cls(**data)


def read_busy_cpu_s(cpus: set[int], proc_stat: Path = PROC_STAT) -> float | None:
    """Busy CPU-seconds since boot summed over ``cpus``; None where /proc/stat is unreadable.

    Uses the per-CPU lines; falls back to the all-CPU line where the kernel gives none.
    """
    try:
        text = proc_stat.read_text()
    except OSError:
        return None
    ticks_per_s = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    per_cpu = 0
    seen = False
    aggregate: int | None = None
    for line in text.splitlines():
        if not line.startswith("cpu"):
            continue
        name, *columns = line.split()
        try:
            values = [int(v) for v in columns]
        except ValueError:
            continue
        busy = sum(values[i] for i in _BUSY_COLUMNS if i < len(values))
        if name == "cpu":
            aggregate = busy
        elif name[3:].isdigit() and int(name[3:]) in cpus:
            per_cpu += busy
            seen = True
    if seen:
        return per_cpu / ticks_per_s
    return None if aggregate is None else aggregate / ticks_per_s


def own_cpu_s() -> float:
    """CPU-seconds used by this process, its threads and its children, finished or running.

    Finished children count once reaped (os.times); running descendants are read through
    psutil, with what their own reaped children used. A child reaped during a window moves
    from the second sum to the first with the same total, so a window's difference holds.
    """
    times = os.times()
    total = times.user + times.system + times.children_user + times.children_system
    try:
        descendants = psutil.Process().children(recursive=True)
    except psutil.Error:
        return total
    for child in descendants:
        try:
            t = child.cpu_times()
        except psutil.Error:  # ended between the listing and the read
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def _load_1m() -> float | None:
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


def verdict(
    share: float | None, other_cpus: float | None, load_start: float | None, cpus: int
) -> tuple[bool | None, str]:
    """Busy or not, with a one-line reason a person can act on.

    Where the CPU counters were read they decide: they measure the window itself. The load
    average does not: it counts this run's own threads and trails the last minute, so a run
    using every CPU shows a load of about the CPU count by itself. It decides only where
    no counter could be read, and then only the value at the start (before this run added
    to it): more runnable tasks than CPUs means the machine was already oversubscribed.
    """
    if share is not None and other_cpus is not None:
        busy = share > BUSY_SHARE
        what = "busy" if busy else "quiet"
        return busy, (
            f"{what}: other processes used {other_cpus:.2f} CPU-s per s "
            f"({share:.0%} of {cpus} CPU{'s' if cpus != 1 else ''}) during the run"
        )
    if load_start is not None:
        busy = load_start > cpus
        what = "busy" if busy else "quiet"
        return busy, (
            f"{what}: 1-minute load average {load_start:.2f} at the start on {cpus} "
            f"CPU{'s' if cpus != 1 else ''} (CPU counters unavailable)"
        )
    return None, "unknown: neither CPU counters nor a load average are available here"


class HostLoadSampler:
    """Measures other processes' CPU use over a window: ``start()``/``stop()`` or ``with``.

    ``with HostLoadSampler() as sampler: run()``, then ``sampler.result`` holds the window.
    """

    def __init__(self, *, proc_stat: Path = PROC_STAT) -> None:
        self._proc_stat = proc_stat
        self._cpus: set[int] = (
            set(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else set(range(os.cpu_count() or 1))
        )
        self._started: tuple[float, float | None, float, float | None] | None = None
        self._result: HostLoad | None = None

    def start(self) -> None:
        self._result = None
        self._started = (
            time.monotonic(),
            read_busy_cpu_s(self._cpus, self._proc_stat),
            own_cpu_s(),
            _load_1m(),
        )

    def stop(self) -> HostLoad:
        if self._started is None:
            raise RuntimeError("HostLoadSampler.stop() called before start()")
        wall_end = time.monotonic()
        total_end = read_busy_cpu_s(self._cpus, self._proc_stat)
        own_end = own_cpu_s()
        load_end = _load_1m()
        wall_start, total_start, own_start, load_start = self._started
        self._started = None
        wall = wall_end - wall_start
        own = max(0.0, own_end - own_start)
        cpus = max(1, len(self._cpus))
        total = other = share = None
        if total_start is not None and total_end is not None:
            total = max(0.0, total_end - total_start)
            # The kernel counts in ticks (10 ms) per CPU and our own time more finely, so a
            # quiet window can come out a tick or two below zero: that is no load.
            other = max(0.0, total - own)
            share = other / (wall * cpus) if wall > 0 else None
        busy, reason = verdict(
            share, None if other is None or wall <= 0 else other / wall, load_start, cpus
        )
        if other is not None and wall >= _SHORTEST_REMEMBERED_S:
            _remember_window(wall_end, other / wall)
        self._result = HostLoad(
            wall_s=wall,
            usable_cpus=cpus,
            total_cpu_s=total,
            own_cpu_s=own,
            other_cpu_s=other,
            other_cpu_share=share,
            load_1m_start=load_start,
            load_1m_end=load_end,
            busy=busy,
            reason=reason,
        )
        return self._result

    @property
    def result(self) -> HostLoad:
        if self._result is None:
            raise RuntimeError("HostLoadSampler has no result: the window has not ended")
        return self._result

    def __enter__(self) -> HostLoadSampler:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._started is not None:  # unless stop() already ended the window inside
            self.stop()


# The last window this process measured (its end on the monotonic clock, and the CPUs other
# processes kept busy over it), for a choice made right after it: other_cpus_recent().
_LAST_WINDOW: tuple[float, float] | None = None
# Shorter windows are not remembered: too few kernel ticks to stand for "now".
_SHORTEST_REMEMBERED_S = 0.5


def _remember_window(ended_at: float, other_cpus: float) -> None:
    global _LAST_WINDOW
    _LAST_WINDOW = (ended_at, other_cpus)


@dataclass(frozen=True)
class RecentLoad:
    """Other processes' load for a choice made now, and where the figure comes from."""

    other_cpus: float | None
    source: str  # e.g. "measured over 0.5 s" or "measured over the last run, 0.3 s ago"


def other_cpus_recent(interval_s: float = 0.5, within_s: float = 2.0) -> RecentLoad:
    """Other processes' CPU load for a choice made now: the window this process measured
    last when it ended less than ``within_s`` ago (a run just measured: seconds of
    counters, a better estimate than a short probe, and no wait), else a fresh
    ``interval_s`` probe (``other_cpus_now``)."""
    if _LAST_WINDOW is not None:
        age = time.monotonic() - _LAST_WINDOW[0]
        if 0 <= age < within_s:
            return RecentLoad(_LAST_WINDOW[1], f"measured over the last window, {age:.1f} s ago")
    return RecentLoad(other_cpus_now(interval_s), f"measured over {interval_s:g} s")


def other_cpus_now(interval_s: float = 0.5) -> float | None:
    """How many CPUs other processes keep busy right now, averaged over ``interval_s``.

    For choices made before a run (e.g. its thread count); None where it cannot be read.
    """
    if not interval_s > 0 or math.isinf(interval_s):
        raise ValueError(f"interval_s: must be a positive number of seconds, got {interval_s}")
    with HostLoadSampler() as sampler:
        time.sleep(interval_s)
    return sampler.result.other_cpus


# Other processes' load below this (CPUs kept busy on average) leaves every CPU free: the
# daemons of an idle machine take a few hundredths of a CPU, a fifth covers their bursts.
NOISE_CPUS = 0.2


def occupied_cpus(other_cpus: float) -> int:
    """Whole CPUs to leave to other processes that keep ``other_cpus`` busy on average
    (services/inference/threads.py leaves them free; a run's hints name them)."""
    return max(0, math.ceil(other_cpus - NOISE_CPUS))
