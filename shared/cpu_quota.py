"""The CPU a process may use: its affinity set, bounded by its cgroup's CPU quota.

In a Kubernetes pod with a CPU limit, the kernel still lists every core of the node (the
affinity set is the node's unless the static CPU manager pins the pod), while the quota
lets the pod's processes use only ``limit`` CPU-seconds per second. A framework that sizes
its thread pool by the cores it sees then runs, say, 64 threads in 2 CPUs' worth of time:
the threads are throttled in turn and a step takes longer than with 2. So threads are
bounded by the quota where one is set (cgroup v2 ``cpu.max``, v1 ``cpu.cfs_quota_us``).
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path

from shared.host_load import usable_cpus

CGROUP = Path("/sys/fs/cgroup")


def cpu_quota(root: Path = CGROUP) -> float | None:
    """CPUs' worth of time the cgroup may use per second (2.5 for "250000 100000"); None
    where no quota is set or none can be read."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    with contextlib.suppress(OSError, ValueError):
        quota_us = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        return None if quota_us <= 0 or period_us <= 0 else quota_us / period_us
    return None


def cpu_limit(root: Path = CGROUP) -> int:
    """Whole CPUs this process can keep busy: the usable CPUs, at most the quota rounded
    down (at least 1; a 2.5-CPU quota gives 2 threads that are never throttled)."""
    quota = cpu_quota(root)
    cpus = usable_cpus()
    return cpus if quota is None else max(1, min(cpus, math.floor(quota)))
