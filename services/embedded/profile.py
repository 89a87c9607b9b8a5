"""`benchstack profile`'s launcher: prepare one batch, have it profiled
(services/inference/profile_passes.py: load the model once and run the leveled
passes), write the trace.

No LoadGen run: the headline latency is the NONE pass's (uninstrumented), and every
deeper level runs as a pass of its own. Like ``bench``, it holds the host slot from the
model load to the last pass (no other measurement on this host disturbs it, nor it them)
and records how busy the host was meanwhile: the summary's ``host`` says BUSY when other
processes took the CPUs. The trace JSON is written to a file; nothing is stored in the
database.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.core.catalogue import resolve_model
from services.core.manifest_checks import check_manifest
from services.inference.backend_interface import BackendOptions
from services.inference.profile_passes import profile_batch
from services.inference.profiling.passes import DEFAULT_ITERATIONS
from services.inference.profiling.run_profile import RunProfiler, batch_of
from services.preprocess.datasets import resolve_dataset
from services.preprocess.local_shard import load_or_preprocess
from shared.settings import Settings
from shared.storage import make_store


@dataclass(frozen=True)
class ProfileRequest:
    model: str
    trace_level: str = "FRAMEWORK"
    framework: str | None = None
    batch_size: int = 1
    iterations: int = DEFAULT_ITERATIONS
    dataset: str = "synthetic"
    seed: int = 0
    backend_options: BackendOptions = field(default_factory=BackendOptions)
    trace_path: Path = Path("trace.json")


@dataclass(frozen=True)
class ProfileOutcome:
    summary: dict[str, Any]
    trace_path: Path
    backend: dict[str, Any]


def run_profile(request: ProfileRequest, settings: Settings) -> ProfileOutcome:
    if request.batch_size < 1:
        raise ValueError("batch_size: must be at least 1")
    profiler = RunProfiler(request.trace_level, request.iterations, passes_at_none=True)
    manifest = resolve_model(request.model)
    framework = request.framework or manifest.framework.name
    check_manifest(manifest, hash_files=False)
    with profiler.step("dataset"):
        dataset = resolve_dataset(
            request.dataset,
            count=request.batch_size,
            seed=request.seed,
            cache_dir=settings.data_dir,
        )
    with profiler.step("preprocess"):
        prepared, _, _ = load_or_preprocess(make_store(settings), dataset, manifest)
    batch = batch_of(prepared.tensors, request.batch_size)
    profiled = profile_batch(
        profiler, framework, request.backend_options, manifest, batch, settings
    )
    # The embedded mode runs under no OpenTelemetry span: the trace names none.
    document = profiler.document(model=manifest.name, framework=framework, trace_id="")
    request.trace_path.parent.mkdir(parents=True, exist_ok=True)
    request.trace_path.write_text(json.dumps(document))
    return ProfileOutcome(profiled.summary, request.trace_path, profiled.backend)
