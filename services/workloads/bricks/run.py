"""Run a suite's bricks on this system, skipping the ones it has measured already.

Each framework's bricks are measured apart, under their own system key (measure.system_key)
and with their own empty brick for the floor: a torch brick's floor is an exported
module's call, an ONNX brick's an onnxruntime session's."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from services.workloads.bricks.formats import brick_format
from services.workloads.bricks.measure import (
    Item,
    MeasureSettings,
    Timing,
    system_key,
    time_modules,
)
from services.workloads.bricks.memory import measure_memory_read, weight_bytes
from services.workloads.bricks.results import read_results, write_results
from services.workloads.bricks.suite import frameworks_in, list_bricks, load_brick
from shared.host_load import HostLoad, HostLoadSampler

# Bricks per LoadGen run: one run's set-up is shared by many bricks, and a crash loses at
# most one chunk's measurements.
CHUNK = 200


# Runs a results file remembers (``runs``): enough to see a pattern, never a growing file.
MAX_RUN_RECORDS = 100


@dataclass(frozen=True)
class RunReport:
    system: str
    bricks: int
    measured_now: int
    reused: int
    seconds: float  # spent measuring now
    # Other processes' CPU use over the whole framework's run (shared/host_load.py).
    load: HostLoad | None = None
    busy_runs: int = 0  # LoadGen runs (chunks) during which the host was busy
    stopped: bool = False  # ``stop`` said so before every missing brick was measured


def _never() -> bool:
    return False


def run_suite(
    suite: Path, settings: MeasureSettings, stop: Callable[[], bool] = _never
) -> list[RunReport]:
    """Measure each brick of the suite that this system has no figure for: one report per
    framework the suite holds bricks of (torch alone, for its floor, in an empty suite).
    The caller holds the host (HostSlot), as `bricks run` does. ``stop`` is asked between
    LoadGen runs (e.g. whether Ctrl-C was pressed): once it says so, what was measured is
    kept and no further run starts."""
    reports: list[RunReport] = []
    for framework in frameworks_in(suite) or ["torch"]:
        if stop():
            break
        reports.append(run_framework(suite, settings, framework, stop))
    return reports


def run_framework(
    suite: Path, settings: MeasureSettings, framework: str, stop: Callable[[], bool] = _never
) -> RunReport:
    """Measure one framework's bricks that this system has no figure for. Each figure
    keeps the host's load during the LoadGen run that measured it (``host_load``,
    ``busy``): a brick measured beside another program's work says so with its figure.
    Each LoadGen run's figures are written as it ends; ``stop`` is asked after each."""
    system = system_key(settings.threads, framework)
    results = read_results(suite, system)
    wanted = list_bricks(suite, framework)
    missing = [s for s in wanted if s not in results.bricks]
    seconds = 0.0
    floors: list[Timing] = []
    busy_runs = measured = 0
    chunks = measure_chunks(suite, missing, settings, framework, floor_alone=results.floor is None)
    with HostLoadSampler() as whole:
        if results.memory is None and brick_format(framework).cold_weights and not stop():
            # Once per system, before the bricks: what the cold-weights construction adds.
            results.memory = measure_memory_read()
            write_results(suite, results)
        for (floor, timings), load in with_host_load(chunks):
            busy_runs += bool(load.busy)
            floors.append(floor)
            results.floor = median_floor(floors)
            for signature, timing in timings.items():
                results.bricks[signature] = timing.to_dict() | {
                    "host_load": load.to_dict(),
                    "busy": bool(load.busy),
                }
            seconds += floor.seconds + sum(t.seconds for t in timings.values())
            write_results(suite, results)  # each chunk kept as soon as it is measured
            measured += len(timings)
            if stop():
                break
    return RunReport(
        system,
        len(wanted),
        measured,
        len(wanted) - len(missing),
        seconds,
        whole.result,
        busy_runs,
        stopped=measured < len(missing),
    )


T = TypeVar("T")


def with_host_load(items: Iterator[T]) -> Iterator[tuple[T, HostLoad]]:
    """Each item of a generator that measures as it is asked (measure_chunks), with the
    host's load while it was produced."""
    while True:
        with HostLoadSampler() as sampler:
            item = next(items, None)
        if item is None:
            return
        assert sampler.result is not None  # the window ended with the block
        yield item, sampler.result


def record_run(suite: Path, report: RunReport, host: dict[str, Any]) -> None:
    """Keep how a `bricks run` shared its host beside the system's figures: the slot
    (waited, overlapped) and the load over the run, as `bench` keeps them in a report's
    ``host``; the latest MAX_RUN_RECORDS runs."""
    results = read_results(suite, report.system)
    load = report.load
    results.runs = [
        *results.runs,
        {
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
            "measured": report.measured_now,
            "busy_runs": report.busy_runs,
            "host": host
            | {"load": load.to_dict() if load else None, "busy": bool(load and load.busy)},
        },
    ][-MAX_RUN_RECORDS:]
    write_results(suite, results)


def chunked(signatures: list[str], *, floor_alone: bool) -> list[list[str]]:
    """``signatures`` in runs of ``CHUNK``; with none, one empty run when ``floor_alone``
    (the empty brick measured alone)."""
    chunks = [signatures[i : i + CHUNK] for i in range(0, len(signatures), CHUNK)]
    return chunks or ([[]] if floor_alone else [])


def measure_chunks(
    suite: Path,
    signatures: list[str],
    settings: MeasureSettings,
    framework: str,
    *,
    floor_alone: bool,
) -> Iterator[tuple[Timing, dict[str, Timing]]]:
    """The bricks ``signatures`` measured ``CHUNK`` per LoadGen run: each run's floor and
    its bricks' timings, run by run. With nothing to measure, one run of the empty brick
    alone when ``floor_alone``. The empty brick rides along in every run: its floor is
    measured under the same conditions as the bricks it is subtracted from."""
    for chunk in chunked(signatures, floor_alone=floor_alone):
        items = [
            _empty_brick(framework, settings.threads),
            *(load_brick(suite, signature, settings.threads) for signature in chunk),
        ]
        floor, *timings = time_modules(items, settings)
        weights = [weight_bytes(module) for module, _ in items[1:]]
        yield (
            floor,
            {
                signature: replace(timing, weight_bytes=size)
                for signature, timing, size in zip(chunk, timings, weights, strict=True)
            },
        )


def _empty_brick(framework: str, threads: int) -> Item:
    brick = brick_format(framework)
    made: Item = brick.call(brick.empty_brick, threads)
    return made


def median_floor(floors: list[Timing]) -> dict[str, float | int]:
    """The system's floor: the median over runs, since one run's figure is multiplied by
    hundreds of bricks."""
    return {
        "median_ms": float(statistics.median(f.median_ms for f in floors)),
        "runs": len(floors),
        "queries": sum(f.queries for f in floors),
    }
