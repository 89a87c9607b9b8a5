"""A `benchstack train` session with real (tiny) torch training: arms interleaved, each run's
raw step times and host load stored, figures and ratios computed from what is stored."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from services.inference.host_slot import HostSlot
from services.workloads.training.repeats import CANNOT_SAY, DIFFER
from services.workloads.training.session import Arm, order, run_session
from services.workloads.training.step_timing import StepLog
from services.workloads.training.throughput import TrainingSettings, run

pytest.importorskip("torch", reason="training needs torch")

SETTINGS = TrainingSettings(
    model="digits",
    steps=4,
    batch_size=4,
    warmup=1,
    image_size=32,
    precision="fp32",
    optimizer="sgd",
    data="synthetic",
    threads=1,
    device="cpu",
    display_every=2,
)


def _measure(
    settings: TrainingSettings, arm: Arm, show: Callable[[StepLog], None] | None
) -> dict[str, Any]:
    return run(settings, show).as_dict()


def test_arms_run_round_robin_repeat_by_repeat() -> None:
    a, b = Arm("synthetic"), Arm("./images")
    assert order([a, b], 3) == [(0, a), (0, b), (1, a), (1, b), (2, a), (2, b)]


def test_a_source_against_itself_five_times(tmp_path: Path) -> None:
    """The acceptance check at a small size: interleaved runs, every figure recomputable
    from the stored step times, and no verdict of a difference between equal arms unless
    the interval excludes 1 (a 95 % interval may, 5 % of the time: the verdict then says so
    consistently)."""
    shown: list[StepLog] = []
    report = run_session(
        SETTINGS,
        [Arm("synthetic"), Arm("synthetic")],
        5,
        _measure,
        HostSlot(tmp_path / "slot"),
        show=shown.append,
    )
    document = report.as_dict()
    assert [arm["label"] for arm in document["arms"]] == ["synthetic", "synthetic #2"]
    assert [(r["arm"], r["repeat"]) for r in document["runs"]][:4] == [
        ("synthetic", 0),
        ("synthetic #2", 0),
        ("synthetic", 1),
        ("synthetic #2", 1),
    ]
    for stored in document["runs"]:
        steps = stored["step_seconds"]
        assert len(steps) == SETTINGS.steps == stored["statistics"]["steps"]
        # The printed figure is batch / mean of the stored step times.
        assert stored["statistics"]["images_per_s"] == pytest.approx(4 / statistics.mean(steps))
        assert isinstance(stored["host"]["busy"], bool)
        assert stored["host"]["load"]["wall_s"] > 0
        assert [line["step"] for line in stored["log"]] == [2, 4]
        assert stored["settings"]["classes"] == 10
    assert len(shown) == 2 * 10  # two lines per run, as they happened
    medians = [
        statistics.median(r["statistics"]["images_per_s"] for r in document["runs"][i::2])
        for i in (0, 1)
    ]
    assert [f["images_per_s"] for f in document["figures"]] == pytest.approx(medians)
    (ratio,) = document["comparisons"]
    assert ratio["estimate"] == pytest.approx(medians[1] / medians[0])
    assert ratio["low"] <= ratio["estimate"] <= ratio["high"]
    holds_one = ratio["low"] <= 1.0 <= ratio["high"]
    if document["busy_runs"]:
        assert ratio["verdict"] == CANNOT_SAY and "BUSY" in ratio["why"]
    else:
        assert ratio["verdict"] == (CANNOT_SAY if holds_one else DIFFER)
    assert document["host"]["exclusive"] and not document["host"]["overlapped"]


def _orphan_hog() -> int:
    """A process spinning on a CPU that is not this process's descendant (the host sampler
    counts descendants as the run's own): started through a shell that exits at once."""
    started = subprocess.run(
        ["sh", "-c", f"{sys.executable} -c 'while True: pass' >/dev/null 2>&1 & echo $!"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(started.stdout.strip())


def test_runs_beside_a_cpu_hog_are_busy_and_get_no_verdict(tmp_path: Path) -> None:
    hogs = [_orphan_hog() for _ in range(len(os.sched_getaffinity(0)))]
    try:
        time.sleep(0.3)
        report = run_session(
            replace(SETTINGS, steps=30),
            [Arm("synthetic"), Arm("synthetic")],
            1,
            _measure,
            HostSlot(tmp_path / "slot"),
        )
    finally:
        for pid in hogs:
            os.kill(pid, signal.SIGKILL)
    assert report.busy_runs == 2 and report.host["busy"]
    assert "busy: other processes used" in report.runs[0].document["host"]["load"]["reason"]
    (ratio,) = report.comparisons
    assert ratio.verdict == CANNOT_SAY and "BUSY" in ratio.why
