"""Brick timings per system: ``<suite>/results/<system>.json``, signature -> timing.

Keyed by signature and system (host, framework version, device, threads), so a later
model reuses every brick already measured on that system and a figure from another
system is never mixed in. Written whole through a temporary file: a crash mid-run keeps
the bricks measured before it.

Beside the bricks sits the system's *floor*: the latency of an empty brick through the
same path (LoadGen, SUT, the exported module's call). Every brick pays it once, and so
does the model measured end to end, which is what the calibrated construction removes.
And its *memory read* cost (memory.py), with each brick's weight bytes beside its timing:
what the cold-weights construction adds for the weights a model reads from memory.

Each figure `bricks run` measured keeps the host's load during its LoadGen run
(``host_load``, ``busy``), and ``runs`` how each run shared the host (slot and load).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class SystemResults:
    system: str
    bricks: dict[str, dict[str, Any]] = field(default_factory=dict)
    floor: dict[str, Any] | None = None
    # {"ms_per_brick": float, "fitted_on": [model, ...]} from `bricks calibrate`.
    brick_cost: dict[str, Any] | None = None
    # How each `bricks run` shared its host (run.record_run), oldest first.
    runs: list[dict[str, Any]] = field(default_factory=list)
    # The system's memory read cost, {"ms_per_mb": ..., ...} (memory.measure_memory_read).
    memory: dict[str, Any] | None = None


def results_path(suite: Path, system: str) -> Path:
    return suite / "results" / f"{system}.json"


def read_results(suite: Path, system: str) -> SystemResults:
    path = results_path(suite, system)
    if not path.exists():
        return SystemResults(system)
    document = json.loads(path.read_text())
    return SystemResults(
        system,
        document.get("bricks", {}),
        document.get("floor"),
        document.get("brick_cost"),
        document.get("runs", []),
        document.get("memory"),
    )


def write_results(suite: Path, results: SystemResults) -> None:
    path = results_path(suite, results.system)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    document = {
        "system": results.system,
        "floor": results.floor,
        "brick_cost": results.brick_cost,
        "bricks": results.bricks,
        "runs": results.runs,
        "memory": results.memory,
    }
    partial.write_text(json.dumps(document, indent=1, sort_keys=True))
    partial.replace(path)
