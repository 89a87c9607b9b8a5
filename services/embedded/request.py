"""What the embedded launcher is asked: one run (``BenchRequest``), and the hooks a front
end follows while it runs (``Progress``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.core.manifest import ModelManifest
from services.core.manifest_sections import Fidelity
from services.core.scenario import ScenarioConfig
from services.inference.backend_interface import BackendOptions
from services.inference.loadgen.progress import ProgressCallback
from services.inference.profiling.passes import DEFAULT_ITERATIONS


@dataclass(frozen=True)
class BenchRequest:
    model: str
    framework: str | None = None
    scenario: ScenarioConfig = field(default_factory=ScenarioConfig)
    batch_size: int = 1
    dataset: str = "synthetic"
    samples: int | None = 64
    seed: int = 0
    backend_options: BackendOptions = field(default_factory=BackendOptions)
    workers: int = 1
    # Optional: a fixed run id (to link runs before they exist), the manifest itself
    # (a rerun uses the stored one, not today's catalogue), and the group this run
    # belongs to, e.g. {"kind": "sweep", "id": ..., "parameter": "batch_size", "value": 8}.
    run_id: str | None = None
    manifest: ModelManifest | None = None
    group: dict[str, Any] | None = None
    # The agent constraint terms of the stack run this one reproduces ({"require": [...]}).
    constraints: dict[str, Any] = field(default_factory=dict)
    # Above NONE, leveled profiling passes follow the (uninstrumented) LoadGen run.
    trace_level: str = "NONE"
    profile_iterations: int = DEFAULT_ITERATIONS
    # Input.fidelity for every input, over the manifest's own; None: the manifest's.
    preprocessing: Fidelity | None = None


@dataclass
class Progress:
    """Hooks a front end (the CLI's progress bars) can follow; all optional."""

    on_stage: Callable[[str], None] = lambda stage: None
    on_preprocess_start: Callable[[int], None] = lambda total: None
    on_preprocess_advance: Callable[[int], None] = lambda n: None
    on_run_start: Callable[[float], None] = lambda expected_s: None
    # Each LoadGen phase (warming up, calibrating, measuring), from a thread of its own;
    # None: no one watches and no polling thread runs.
    on_loadgen: ProgressCallback | None = None
