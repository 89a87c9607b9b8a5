"""A `benchstack train` invocation: every arm (a data source, or a worker count) run
``repeats`` times, interleaved round-robin (A, B, A, B, ...: repeat r of every arm before
repeat r + 1 of any), holding the host slot throughout and sampling the host's load over
each run, as `bench` does (services/inference/host_slot.py, shared/host_load.py).

The session's document, written as one JSON report (report.write_session_report), is what
a viewer needs to audit every figure: each run's settings, raw step times, progress lines
and host load, each arm's median with its interval, and the ratios with their verdicts
(repeats.py). Its shape is ``SessionReport.as_dict``'s.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from services.inference.host_slot import HostSlot
from services.workloads.training.repeats import (
    RULE,
    ArmFigure,
    RatioFigure,
    arm_figure,
    ratio_figure,
)
from services.workloads.training.step_timing import DEFINITIONS, StepLog
from services.workloads.training.throughput import TrainingSettings, settings_dict
from shared.host_load import HostLoadSampler

MAX_REPEATS = 100


@dataclass(frozen=True)
class Arm:
    """One thing measured: ``data`` with ``workers`` DDP workers (None: one process).
    ``name`` tells apart arms that are alike (``--data synthetic,synthetic``)."""

    data: str
    workers: int | None = None
    name: str = ""

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        return self.data if self.workers is None else f"{self.workers} workers"

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "data": self.data, "workers": self.workers}


def named_arms(arms: list[Arm]) -> list[Arm]:
    """``arms`` with a name each where labels repeat: "synthetic", "synthetic #2"."""
    seen: dict[str, int] = {}
    named = []
    for arm in arms:
        seen[arm.label] = seen.get(arm.label, 0) + 1
        count = seen[arm.label]
        named.append(arm if count == 1 else replace(arm, name=f"{arm.label} #{count}"))
    return named


# (settings with the arm's data, the arm, the progress sink) -> a run's document, which
# holds "statistics" (step_timing.StepStatistics.as_dict()) at least.
Measure = Callable[[TrainingSettings, Arm, Callable[[StepLog], None] | None], dict[str, Any]]


@dataclass(frozen=True)
class ArmRun:
    arm: Arm
    repeat: int
    position: int  # its place in the session's order, from 0
    document: dict[str, Any]

    @property
    def images_per_s(self) -> float:
        return float(self.document["statistics"]["images_per_s"])

    @property
    def busy(self) -> bool:
        return bool(self.document["host"]["busy"])

    def as_dict(self) -> dict[str, Any]:
        return {
            "arm": self.arm.label,
            "repeat": self.repeat,
            "position": self.position,
            **self.document,
        }


@dataclass(frozen=True)
class SessionReport:
    settings: TrainingSettings
    arms: list[Arm]
    repeats: int
    runs: list[ArmRun]
    figures: list[ArmFigure]
    comparisons: list[RatioFigure]
    host: dict[str, Any]

    @property
    def busy_runs(self) -> int:
        return sum(run.busy for run in self.runs)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "training-session",
            "settings": settings_dict(self.settings),
            "arms": [arm.as_dict() for arm in self.arms],
            "repeats": self.repeats,
            "order": "round-robin: repeat r of every arm, in the order given, before repeat r + 1",
            "runs": [run.as_dict() for run in self.runs],
            "figures": [figure.as_dict() for figure in self.figures],
            "comparisons": [comparison.as_dict() for comparison in self.comparisons],
            "busy_runs": self.busy_runs,
            "host": self.host,
            "definitions": {
                **DEFINITIONS,
                "figures": "per arm: the median of its runs' images/s",
                "ratio": "median images/s of b / median images/s of a",
                "speedup": "median images/s at b workers / median at a (the first count)",
                "efficiency": "speedup / (b workers / a workers)",
                "interval": RULE,
                "verdict": "differ: the interval excludes 1; cannot say: it holds 1, there is "
                "none, or a run was measured on a BUSY host",
            },
        }


def check_repeats(repeats: int) -> int:
    if not 1 <= repeats <= MAX_REPEATS:
        raise ValueError(f"--repeats: {repeats} is outside the accepted range 1..{MAX_REPEATS}")
    return repeats


def order(arms: list[Arm], repeats: int) -> list[tuple[int, Arm]]:
    """(repeat, arm) in the order they run: round-robin over the arms, repeat by repeat."""
    return [(repeat, arm) for repeat in range(repeats) for arm in arms]


def run_session(
    settings: TrainingSettings,
    arms: list[Arm],
    repeats: int,
    measure: Measure,
    slot: HostSlot,
    *,
    on_run: Callable[[ArmRun], None] | None = None,
    show: Callable[[StepLog], None] | None = None,
    shared: bool = False,
) -> SessionReport:
    """Every arm ``repeats`` times, interleaved, on the host slot; each run's document gets
    ``host``: the other processes' load over the run and whether it was BUSY. ``shared``:
    for one rank of a multi-process run, which holds the slot with the others
    (HostSlot.measuring's ``shared``)."""
    check_repeats(repeats)
    if not arms:
        raise ValueError("--data: give at least one data source")
    arms = named_arms(arms)
    runs: list[ArmRun] = []
    with slot.measuring(f"train-{uuid.uuid4()}", shared=shared) as use:
        for position, (repeat, arm) in enumerate(order(arms, repeats)):
            with HostLoadSampler() as load:
                document = measure(replace(settings, data=arm.data), arm, show)
            document["host"] = {"load": load.result.to_dict(), "busy": bool(load.result.busy)}
            runs.append(ArmRun(arm, repeat, position, document))
            if on_run is not None:
                on_run(runs[-1])
    host = use.to_dict() | {
        "busy": any(run.busy for run in runs),
        "threads": settings.threads,
    }
    figures, comparisons = summarise_runs(arms, runs)
    return SessionReport(settings, arms, repeats, runs, figures, comparisons, host)


def summarise_runs(
    arms: list[Arm], runs: list[ArmRun]
) -> tuple[list[ArmFigure], list[RatioFigure]]:
    """Each arm's figure; each later arm against the first: a ratio for data sources, a
    speedup and an efficiency E(N) for worker counts. A run belongs to the arm it ran as
    (identity: two arms may be alike)."""
    by_arm = [[run for run in runs if run.arm is arm] for arm in arms]
    values = [[run.images_per_s for run in arm_runs] for arm_runs in by_arm]
    figures = [arm_figure(arm.label, value) for arm, value in zip(arms, values, strict=True)]
    comparisons = []
    first = arms[0]
    for index, arm in enumerate(arms[1:], start=1):
        busy = sum(run.busy for run in by_arm[0] + by_arm[index])
        pair = (first.label, values[0], arm.label, values[index])
        if arm.workers is None or first.workers is None:
            comparisons.append(ratio_figure("ratio", *pair, busy_runs=busy))
            continue
        comparisons.append(ratio_figure("speedup", *pair, busy_runs=busy))
        per_worker = first.workers / arm.workers
        comparisons.append(ratio_figure("efficiency", *pair, scale=per_worker, busy_runs=busy))
    return figures, comparisons
