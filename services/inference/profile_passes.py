"""A model profiled on one batch without LoadGen (`benchstack profile`): on the host slot
from the model load to the last pass, the cold first inference and the leveled passes,
with how busy other processes kept the host meanwhile."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np

from services.core.manifest import ModelManifest
from services.inference.backend_interface import BackendOptions
from services.inference.backends.registry import create_backend
from services.inference.host_slot import HostSlot
from services.inference.profiling.run_profile import RunProfiler
from services.inference.threads import with_scenario_threads
from shared.host_load import HostLoad, HostLoadSampler
from shared.settings import Settings


@dataclass(frozen=True)
class Profiled:
    """The passes' summary (with the host record) and the backend's description."""

    summary: dict[str, Any]
    backend: dict[str, Any]


def profile_batch(
    profiler: RunProfiler,
    framework: str,
    options: BackendOptions,
    manifest: ModelManifest,
    batch: np.ndarray,
    settings: Settings,
) -> Profiled:
    """Hold the host, load the model, run the cold inference and every pass on ``batch``."""
    slot = HostSlot.of(settings)
    with slot.measuring(f"profile-{uuid.uuid4()}") as host:
        # Threads for the load the host has once it is ours.
        options, threads = with_scenario_threads(options, "single-stream")
        backend = create_backend(framework, options)
        try:
            with profiler.step("model load"):
                backend.load(manifest)
            with HostLoadSampler() as load:
                profiler.cold(backend, batch)
                profiler.passes(backend, batch)
            described = backend.describe()
        finally:
            backend.close()
    summary = profiler.summary()
    assert summary is not None  # a profile runs its passes at every level (passes_at_none)
    summary["host"] = host_record(host.to_dict(), load.result, threads.reason)
    return Profiled(summary, described)


def host_record(slot: dict[str, Any], load: HostLoad, threads: str) -> dict[str, Any]:
    """How the profile shared its host, in the shape a run report's ``host`` has (so
    ``render.host_text`` prints it): the slot, the load over the passes, the threads."""
    return slot | {"load": load.to_dict(), "busy": bool(load.busy), "threads": threads}
