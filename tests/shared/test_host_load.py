"""The host-load sampler against real processes on this (shared) machine.

Other sessions may use the CPUs at any time, so no test asserts that a window was quiet:
they assert what more load cannot undo (a busy loop makes a window busy; this process's
and its children's CPU is counted as its own, never as another's).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from shared.host_load import (
    BUSY_SHARE,
    HostLoad,
    HostLoadSampler,
    other_cpus_now,
    own_cpu_s,
    read_busy_cpu_s,
    usable_cpus,
    verdict,
)

LOOP = "while True: pass"

needs_proc_stat = pytest.mark.skipif(
    not Path("/proc/stat").exists(), reason="no /proc/stat on this system: CPU counters unread"
)


def _burn(seconds: float) -> None:
    """Keep this process's CPU busy for ``seconds`` of its own CPU time."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def _cpu_s(process: psutil.Process) -> float:
    t = process.cpu_times()
    return float(t.user + t.system)


def _wait_for_cpu(process: psutil.Process, seconds: float, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while _cpu_s(process) < seconds:
        if time.monotonic() > deadline:
            raise AssertionError(
                f"process {process.pid} got no {seconds} s of CPU in {timeout_s} s"
            )
        time.sleep(0.02)


@pytest.fixture
def stranger() -> Iterator[psutil.Process]:
    """A busy loop that is NOT a descendant of this process (started through a parent that
    exits at once), as another user's job would be."""
    launcher = subprocess.run(
        [
            sys.executable,
            "-c",
            "import subprocess, sys\n"
            f"p = subprocess.Popen([sys.executable, '-c', {LOOP!r}], start_new_session=True,\n"
            "    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
            "print(p.pid)",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    process = psutil.Process(int(launcher.stdout.strip()))
    try:
        yield process
    finally:
        os.kill(process.pid, signal.SIGKILL)


def test_usable_cpus_is_the_affinity_set() -> None:
    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert usable_cpus() == expected


def test_proc_stat_parse_counts_only_the_given_cpus_and_not_guest_twice(tmp_path: Path) -> None:
    ticks = os.sysconf("SC_CLK_TCK")
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal guest guest_nice
    stat.write_text(
        "cpu  999 0 0 0 0 0 0 0 0 0\n"
        "cpu0 100 10 20 5000 300 1 2 3 50 7\n"
        "cpu1 400 0 0 9000 0 0 0 0 0 0\n"
        "intr 12345\n"
    )
    # cpu0: 100+10+20+1+2+3 busy ticks; idle, iowait and guest (inside user) left out.
    assert read_busy_cpu_s({0}, stat) == pytest.approx(136 / ticks)
    assert read_busy_cpu_s({0, 1}, stat) == pytest.approx(536 / ticks)
    # No per-CPU line for the set: the all-CPU line is what there is.
    assert read_busy_cpu_s({5}, stat) == pytest.approx(999 / ticks)
    assert read_busy_cpu_s({0}, tmp_path / "absent") is None


@pytest.mark.parametrize(
    ("share", "load", "cpus", "busy", "words"),
    [
        (0.425, None, 2, True, "busy: other processes used 0.85 CPU-s per s (42% of 2 CPUs)"),
        (BUSY_SHARE, None, 2, False, "quiet: other processes used 0.20 CPU-s per s (10% of 2"),
        (0.02, 9.0, 1, False, "(2% of 1 CPU)"),  # the counters decide, not the load average
        (None, 3.0, 2, True, "busy: 1-minute load average 3.00 at the start on 2 CPUs"),
        (None, 1.5, 2, False, "quiet: 1-minute load average 1.50"),
        (None, None, 2, None, "unknown"),
    ],
)
def test_verdict(
    share: float | None, load: float | None, cpus: int, busy: bool | None, words: str
) -> None:
    other = None if share is None else share * cpus
    judged, reason = verdict(share, other, load, cpus)
    assert judged is busy
    assert words in reason


@needs_proc_stat
def test_a_busy_process_elsewhere_makes_the_window_busy(stranger: psutil.Process) -> None:
    assert stranger.pid not in {p.pid for p in psutil.Process().children(recursive=True)}
    _wait_for_cpu(stranger, 0.05)  # running its loop, past the interpreter's start
    before = _cpu_s(stranger)
    with HostLoadSampler() as sampler:
        time.sleep(1.5)
    used = _cpu_s(stranger) - before
    load = sampler.result
    assert load.busy is True, load.reason
    # Everything the loop took in the window is counted as other (less a tick per CPU of
    # rounding, and the loop's reading sits a few ms outside the window).
    assert load.other_cpu_s is not None
    assert load.other_cpu_s >= used - 0.1 * load.usable_cpus
    assert "other processes used" in load.reason and "busy" in load.reason


@needs_proc_stat
def test_cpu_this_process_burns_is_its_own_not_other() -> None:
    with HostLoadSampler() as sampler:
        start = time.process_time()
        _burn(1.0)
        burned = time.process_time() - start
    load = sampler.result
    assert load.own_cpu_s >= burned - 0.03  # os.times() ticks in 1/100 s, user and system apart
    assert load.total_cpu_s is not None and load.other_cpu_s is not None
    # The burn is inside the total and subtracted from it, not added to "other".
    assert load.other_cpu_s == pytest.approx(max(0.0, load.total_cpu_s - load.own_cpu_s))
    assert load.other_cpu_share == pytest.approx(
        load.other_cpu_s / (load.wall_s * load.usable_cpus)
    )


def test_a_running_child_counts_as_own() -> None:
    with HostLoadSampler() as sampler:
        child = subprocess.Popen([sys.executable, "-c", LOOP])
        try:
            process = psutil.Process(child.pid)
            _wait_for_cpu(process, 0.5)
            used_by_child = _cpu_s(process)
            # Stopped while the child still runs: psutil reads it, not os.times().
            load = sampler.stop()
        finally:
            child.kill()
            child.wait()
    # Both counters tick in 1/100 s; their difference may round down by one tick.
    assert load.own_cpu_s >= used_by_child - 0.011


def test_a_finished_child_counts_as_own() -> None:
    with HostLoadSampler() as sampler:
        child = subprocess.run(
            [
                sys.executable,
                "-c",
                "import time\nend = time.process_time() + 0.5\n"
                "while time.process_time() < end: pass\nprint(time.process_time())",
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
    assert sampler.result.own_cpu_s >= float(child.stdout) - 0.02


def test_own_cpu_only_grows() -> None:
    first = own_cpu_s()
    _burn(0.05)
    assert own_cpu_s() > first


def test_without_proc_stat_cpu_figures_are_none_and_the_load_average_decides(
    tmp_path: Path,
) -> None:
    with HostLoadSampler(proc_stat=tmp_path / "absent") as sampler:
        time.sleep(0.05)
    load = sampler.result
    assert load.total_cpu_s is None and load.other_cpu_s is None
    assert load.other_cpu_share is None and load.other_cpus is None
    assert load.own_cpu_s >= 0.0 and load.wall_s > 0
    if hasattr(os, "getloadavg"):
        assert load.load_1m_start is not None and load.busy is not None
        assert "CPU counters unavailable" in load.reason


@needs_proc_stat
def test_result_is_well_formed_and_survives_a_dict_round_trip() -> None:
    with HostLoadSampler() as sampler:
        time.sleep(0.2)
    load = sampler.result
    assert load.wall_s >= 0.2
    assert load.usable_cpus == usable_cpus()
    assert load.other_cpu_share is not None and load.other_cpu_share >= 0.0
    assert load.busy is (load.other_cpu_share > BUSY_SHARE)
    assert load.busy_share_threshold == BUSY_SHARE
    assert HostLoad.from_dict(load.to_dict()) == load


def test_stop_before_start_and_result_before_stop_are_refused() -> None:
    sampler = HostLoadSampler()
    with pytest.raises(RuntimeError, match="before start"):
        sampler.stop()
    sampler.start()
    with pytest.raises(RuntimeError, match="has not ended"):
        _ = sampler.result


@needs_proc_stat
def test_other_cpus_now_is_a_rate_of_cpus() -> None:
    other = other_cpus_now(0.2)
    assert other is not None and 0.0 <= other <= usable_cpus() + 0.1
    with pytest.raises(ValueError, match="interval_s"):
        other_cpus_now(0)
