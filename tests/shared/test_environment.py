"""The machine's description recorded with every run: right, and cheap to take per run."""

from __future__ import annotations

from importlib import metadata
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


def test_the_header_reader_agrees_with_the_email_parser_on_every_installed_package() -> None:
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        expected = (name, dist.version) if name else None
        assert environment.name_and_version(dist) == expected, dist


def test_the_header_reader_stops_at_the_body(tmp_path: Path) -> None:
    info = tmp_path / "demo-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\r\nName: demo_pkg\r\nVersion: 1.0\r\n\r\n"
        "Name: not-a-header\nVersion: 9\n"
    )
    dist = metadata.PathDistribution(info)
    assert environment.name_and_version(dist) == ("demo_pkg", "1.0")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nVersion: 1.0\n")
    assert environment.name_and_version(dist) is None


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
