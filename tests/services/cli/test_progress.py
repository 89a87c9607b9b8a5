"""Long waits show progress: an embedded run's phases, a stack evaluation's state."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from rich.console import Console

from services.cli.bench_options import BenchOptions
from services.cli.progress import (
    STAGE_PERCENT,
    EvaluationProgress,
    ProgressBars,
    evaluation_progress,
)
from services.embedded.bench import run_bench
from shared.settings import Settings
from tests.support.cli import TINY, piped


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
    request = BenchOptions(
        model=TINY, framework="null", scenario="multi-stream", duration=0.3, samples=8
    ).request()
    with ProgressBars(console) as hooks:
        report = run_bench(request, settings, hooks)
    text = screen.getvalue()
    for label in ("preprocessing", "8/8 files", "measuring", "running LoadGen"):
        assert label in text, text
    # Multi-stream ends after its min duration and 32 queries of 8 samples (the quick profile).
    count = report["performance"]["sample_count"]
    assert re.search(rf"measuring .*━.* 0\.3 s reached, {count:,}/256 samples", text), text
    assert "calibrating" not in text  # only Offline and Server need a throughput probe


def test_a_stack_evaluation_advances_through_its_states_and_its_shards() -> None:
    queued = evaluation_progress({"state": "QUEUED", "shardsReady": 0, "shardsTotal": 0})
    assert queued == EvaluationProgress("QUEUED", STAGE_PERCENT["QUEUED"], "")
    half = evaluation_progress({"state": "PREPROCESSING", "shardsReady": 2, "shardsTotal": 4})
    assert half.percent == STAGE_PERCENT["PREPROCESSING"] + 25
    assert half.detail == "shards 2/4"
    running = evaluation_progress({"state": "RUNNING", "shardsReady": 4, "shardsTotal": 4})
    assert half.percent < running.percent < 100
    assert evaluation_progress({"state": "SUCCEEDED"}).percent == 100


def test_why_an_evaluation_is_not_moving_replaces_the_shard_count() -> None:
    waiting = evaluation_progress(
        {
            "state": "PREPROCESSING",
            "shardsReady": 0,
            "shardsTotal": 2,
            "reason": "waiting 60 s: no live preprocess worker [x]",
        }
    )
    assert waiting.percent == STAGE_PERCENT["PREPROCESSING"]
    # Said in yellow, with the reason's own brackets escaped from Rich's markup.
    assert waiting.detail == "[yellow]waiting 60 s: no live preprocess worker \\[x][/]"
