"""The machine's description recorded with every run: right, and cheap to take per run."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared import environment


@pytest.mark.skipif(not Path("/proc/cpuinfo").exists(), reason="no /proc/cpuinfo (not Linux)")
def test_the_cpu_model_is_the_one_the_kernel_reports() -> None:
    first = next(
        line.split(":", 1)[1].strip()
        for line in Path("/proc/cpuinfo").read_text().splitlines()
        if line.startswith("model name")
    )
    info = environment.cpu_info()
    assert info["model"] == first
    assert all(flag.startswith(("avx", "amx")) for flag in info["flags"])


def test_package_versions_are_a_copy_the_caller_may_change() -> None:
    versions = environment.package_versions()
    assert versions["numpy"]
    versions["numpy"] = "changed"
    assert environment.package_versions()["numpy"] != "changed"


def test_after_warming_a_capture_reads_neither_the_cpu_nor_the_packages_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the measurement children inherit from the warmed fork server."""
    environment.warm_caches()

    def read_again(*_args: object) -> None:
        raise AssertionError("read again after warm_caches()")

    monkeypatch.setattr(environment.metadata, "distributions", read_again)
    monkeypatch.setattr(environment, "_proc_cpuinfo", read_again)
    captured = environment.capture_environment()
    assert captured["cpu"]["logical_cores"] >= 1
    assert captured["packages"]["numpy"]
