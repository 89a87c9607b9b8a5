"""The CPUs a process may keep busy: its affinity set bounded by its cgroup's CPU quota."""

from __future__ import annotations

from pathlib import Path

from shared.cpu_quota import cpu_limit, cpu_quota
from shared.host_load import usable_cpus


def test_cgroup_v2_quota_in_cpus(tmp_path: Path) -> None:
    (tmp_path / "cpu.max").write_text("250000 100000\n")
    assert cpu_quota(tmp_path) == 2.5
    assert cpu_limit(tmp_path) == min(usable_cpus(), 2)


def test_cgroup_v2_without_a_quota(tmp_path: Path) -> None:
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cpu_quota(tmp_path) is None and cpu_limit(tmp_path) == usable_cpus()


def test_cgroup_v1_quota_and_its_unlimited_value(tmp_path: Path) -> None:
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("50000\n")
    assert cpu_quota(tmp_path) == 0.5
    assert cpu_limit(tmp_path) == 1  # a fraction of a CPU still runs one thread
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert cpu_quota(tmp_path) is None


def test_no_cgroup_files_means_no_quota(tmp_path: Path) -> None:
    assert cpu_quota(tmp_path) is None and cpu_limit(tmp_path) == usable_cpus()
