"""Piped tables keep every name whole, as a user sees them under `| less` or in CI."""

from __future__ import annotations

import re
from pathlib import Path

from services.core.catalogue import list_catalogue
from tests.support.cli import TINY, piped


def test_models_piped_keeps_every_name_whole(data_dir: Path) -> None:
    result = piped(data_dir, "models")
    assert result.returncode == 0, result.stderr
    for manifest in list_catalogue():
        assert re.search(rf"│ {re.escape(manifest.name)}\s+│", result.stdout), manifest.name
    assert "convnext_tiny" in result.stdout
    assert "…" not in result.stdout  # Rich's mark for a cell it cut


def test_results_piped_keeps_every_cell_whole(data_dir: Path) -> None:
    bench = piped(data_dir, "bench", TINY, "-f", "null", "--duration", "0.2", "--samples", "4")
    assert bench.returncode == 0, bench.stderr
    result = piped(data_dir, "results")
    assert result.returncode == 0, result.stderr
    assert "tiny-cnn:0.1.0" in result.stdout and "offline/performance" in result.stdout
    assert "…" not in result.stdout


def test_kernel_names_lose_their_return_type_and_parameters() -> None:
    from services.cli.profile_render import short_kernel_name

    name = "void implicit_convolve_sgemm<float, float, 1024>(int, int, float const*)"
    assert short_kernel_name(name) == "implicit_convolve_sgemm<float, float, 1024>"
    # A lambda's parentheses inside template arguments are not the parameter list.
    nested = "void at::native::kernel<4, at::native::f(int)::{lambda(float)#1}>(int, float)"
    assert short_kernel_name(nested) == nested[len("void ") : -len("(int, float)")]
    copy = "Memcpy HtoD (Pageable -> Device)"
    assert short_kernel_name(copy) == copy
    assert len(short_kernel_name("k" * 300, width=50)) == 50


def test_a_busy_host_is_said_busy_once() -> None:
    from services.cli.render import host_text

    reason = "busy: other processes used 1.67 CPU-s per s (84% of 2 CPUs) during the run"
    text = host_text({"busy": True, "load": {"reason": reason}})
    assert text.startswith("[bold red]BUSY[/]: other processes used 1.67 CPU-s per s"), text
    assert "busy:" not in text.lower().replace("[bold red]busy[/]:", "")


def test_models_at_80_columns_keeps_every_name_whole(data_dir: Path) -> None:
    from tests.support.cli import benchstack

    result = benchstack(data_dir, "models", columns=80)
    assert result.returncode == 0, result.stderr
    assert all(len(line) <= 80 for line in result.stdout.splitlines()), result.stdout
    for manifest in list_catalogue():  # what `bench` takes, on one line
        assert re.search(rf"│ {re.escape(manifest.name)}\s+│", result.stdout), manifest.name
    assert "left out at 80 columns: description" in " ".join(result.stdout.split())
