"""Run a suite's bricks on this system, skipping the ones it has measured already.

Each framework's bricks are measured apart, under their own system key (measure.system_key)
and with their own empty brick for the floor: a torch brick's floor is an exported
module's call, an ONNX brick's an onnxruntime session's."""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from services.workloads.bricks.generate import frameworks_in, list_bricks, load_brick
from services.workloads.bricks.measure import (
    Item,
    MeasureSettings,
    Timing,
    empty_brick,
    system_key,
    time_modules,
)
from services.workloads.bricks.results import read_results, write_results

# Bricks per LoadGen run: one run's set-up is shared by many bricks, and a crash loses at
# most one chunk's measurements.
CHUNK = 200


@dataclass(frozen=True)
class RunReport:
    system: str
    bricks: int
    measured_now: int
    reused: int
    seconds: float  # spent measuring now


def run_suite(suite: Path, settings: MeasureSettings) -> list[RunReport]:
    """Measure each brick of the suite that this system has no figure for: one report per
    framework the suite holds bricks of (torch alone, for its floor, in an empty suite)."""
    return [run_framework(suite, settings, f) for f in frameworks_in(suite) or ["torch"]]


def run_framework(suite: Path, settings: MeasureSettings, framework: str) -> RunReport:
    """Measure one framework's bricks that this system has no figure for."""
    system = system_key(settings.threads, framework)
    results = read_results(suite, system)
    wanted = list_bricks(suite, framework)
    missing = [s for s in wanted if s not in results.bricks]
    seconds = 0.0
    floors: list[Timing] = []
    for floor, timings in measure_chunks(
        suite, missing, settings, framework, floor_alone=results.floor is None
    ):
        floors.append(floor)
        results.floor = median_floor(floors)
        for signature, timing in timings.items():
            results.bricks[signature] = timing.to_dict()
        seconds += floor.seconds + sum(t.seconds for t in timings.values())
        write_results(suite, results)  # each chunk kept as soon as it is measured
    return RunReport(system, len(wanted), len(missing), len(wanted) - len(missing), seconds)


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
    chunks = [signatures[i : i + CHUNK] for i in range(0, len(signatures), CHUNK)]
    if not chunks and floor_alone:
        chunks = [[]]
    for chunk in chunks:
        items = [
            _empty_brick(framework, settings.threads),
            *(load_brick(suite, signature, settings.threads) for signature in chunk),
        ]
        floor, *timings = time_modules(items, settings)
        yield floor, dict(zip(chunk, timings, strict=True))


def _empty_brick(framework: str, threads: int) -> Item:
    if framework == "onnx":
        from services.workloads.bricks.measure_onnx import empty_onnx_brick

        return empty_onnx_brick(threads)
    return empty_brick()


def median_floor(floors: list[Timing]) -> dict[str, float | int]:
    """The system's floor: the median over runs, since one run's figure is multiplied by
    hundreds of bricks."""
    return {
        "median_ms": float(statistics.median(f.median_ms for f in floors)),
        "runs": len(floors),
        "queries": sum(f.queries for f in floors),
    }
