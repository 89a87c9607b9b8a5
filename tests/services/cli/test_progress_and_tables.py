"""Long waits show progress and piped tables keep every name whole, as a user sees them."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from services.cli.commands.bench import _progress_bars, build_request
from services.embedded.bench import run_bench
from shared.catalogue import list_catalogue
from shared.settings import Settings

TINY = "tests/fixtures/tiny_cnn.yaml"


def piped(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI with stdout and stderr both pipes and no COLUMNS: as under `| less` or in CI."""
    env = {**os.environ, "BENCHSTACK_DATA_DIR": str(data_dir)}
    for name in ("COLUMNS", "BENCHSTACK_DATABASE_URL", "BENCHSTACK_S3_ENDPOINT"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "services.cli.main", *args],
        capture_output=True,  # both pipes: neither is a terminal
        text=True,
        env=env,
        timeout=300,
    )


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


def test_piped_bench_prints_each_phase_on_stderr_and_clean_json_on_stdout(
    data_dir: Path,
) -> None:
    result = piped(
        data_dir, "bench", TINY, "-f", "null", "--duration", "0.5", "--samples", "8", "--json"
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)  # progress never mixes into the JSON
    lines = result.stderr.splitlines()
    assert any(line.startswith("calibrating: ") for line in lines), lines
    assert any(line.startswith("measuring: ") for line in lines), lines
    # The last line of the measurement counts what LoadGen counted.
    done = [line for line in lines if line.startswith("measuring done: ")]
    count = report["performance"]["sample_count"]
    assert done == [f"measuring done: {count:,}/{count:,} samples"], lines
    # Warm-up takes seconds at most and is not announced: an error there stays one line.
    assert not any("warming up" in line for line in lines), lines


def test_terminal_shows_bars_for_calibration_and_measurement(settings: Settings) -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120, color_system=None)
    request = build_request(
        model=TINY, framework="null", scenario="multi-stream", duration=0.3, samples=8
    )
    with _progress_bars(console) as hooks:
        report = run_bench(request, settings, hooks)
    text = screen.getvalue()
    for label in ("preprocessing", "8/8 files", "measuring", "running LoadGen"):
        assert label in text, text
    # Multi-stream ends after its min duration and 32 queries of 8 samples (the quick profile).
    count = report["performance"]["sample_count"]
    assert re.search(rf"measuring .*━.* 0\.3 s reached, {count:,}/256 samples", text), text
    assert "calibrating" not in text  # only Offline and Server need a throughput probe
