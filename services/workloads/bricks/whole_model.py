"""A whole model measured the way ``benchstack bench`` measures it (services/embedded/bench
``run_bench``: the host slot, the model loaded by its backend, LoadGen SingleStream over
a synthetic dataset, the host's load recorded, the run stored), so the bricks are held
against the figure a user would get from `bench`, not from the bricks' own harness. The
launcher sits above the workloads: its caller lends it (``bench``, as CommandKit.bench).

A model named by architecture (``torchvision:googlenet``) has no manifest of its own:
``bench_manifest`` writes one (random weights, as the bricks get), and a catalogue model
keeps its own with its input side set to the bricks' image size.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from services.core.architectures import ZOOS
from services.core.catalogue import resolve_model
from services.core.manifest import ModelManifest
from services.core.request import RunRequest
from services.core.stored_report import load_loadgen_report
from services.workloads.bricks.measure import MeasureSettings
from services.workloads.bricks.models import DEFAULT_IMAGE_SHAPE, recipe_name
from shared.settings import Settings

# Images the synthetic dataset gives each run: SingleStream sends one per query, and the
# model's latency does not depend on which.
SAMPLES = 8
IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]


@dataclass(frozen=True)
class WholeTiming:
    """One `bench` run of a whole model."""

    median_ms: float  # the SUT's median latency
    queries: int
    loadgen_s: float  # the LoadGen phase alone
    seconds: float  # the whole run_bench call: data, model load, LoadGen, storing
    host: dict[str, Any]  # the report's host: slot use, allocator, load over the run, busy
    run_id: str
    # Pages the kernel mapped for the run during its LoadGen phase (shared/allocator.py).
    minor_faults: int = 0

    @property
    def busy(self) -> bool:
        return bool(self.host.get("busy"))


def bench_manifest(spec: str, image_size: int | None = None) -> ModelManifest:
    """The manifest `bench` runs for ``spec`` (a catalogue name, a manifest file or a
    torch architecture), its image input ``image_size`` pixels square when given."""
    if spec.partition(":")[0] in ZOOS:
        side = image_size or DEFAULT_IMAGE_SHAPE[-1]
        return ModelManifest.model_validate(
            {
                "name": recipe_name(spec).lower(),
                "version": "1.0.0",
                "description": f"{spec} with random weights, for DLBricks",
                "framework": {"name": "torch"},
                "inputs": [_image_input(DEFAULT_IMAGE_SHAPE[0], side)],
                "outputs": [{"modality": "classification", "steps": [{"top_k": {"k": 5}}]}],
                "source": {"architecture": spec},
            }
        )
    manifest = resolve_model(spec)
    if image_size is None:
        return manifest
    first = manifest.inputs[0]
    if first.modality != "image" or len(first.shape) != 3:
        raise ValueError(
            f"image-size: {manifest.name} takes a {first.modality} of shape "
            f"{list(first.shape)}; accepted: leave --image-size out for it"
        )
    data = manifest.model_dump(mode="json")
    data["inputs"][0] = _image_input(first.shape[0], image_size)
    return ModelManifest.model_validate(data | {"base_dir": manifest.base_dir})


def _image_input(channels: int, side: int) -> dict[str, Any]:
    grey = channels == 1
    return {
        "modality": "image",
        "shape": [channels, side, side],
        "steps": [
            {"decode": {"color_mode": "L" if grey else "RGB"}},
            {"resize": {"size": [side, side], "method": "bilinear", "keep_aspect": False}},
            {
                "normalize": {
                    "mean": [0.5] if grey else IMAGENET_MEAN,
                    "std": [0.5] if grey else IMAGENET_STD,
                    "scale": 255.0,
                }
            },
            {"layout": {"order": "NCHW"}},
        ],
    }


# `benchstack bench` on a request, run on this manifest instead of resolving its model:
# the run's stored report.
Bench = Callable[[RunRequest, ModelManifest, Settings], dict[str, Any]]


def measure_whole(
    manifest: ModelManifest,
    settings: MeasureSettings,
    config: Settings,
    batch_size: int = 1,
    *,
    bench: Bench,
) -> WholeTiming:
    """One `bench` run of the model: SingleStream at ``batch_size``, at least ``settings``'
    queries and duration, ``settings.threads`` intra-op threads (0: what `bench` chooses)."""
    request = RunRequest(
        model=manifest.name,
        framework="torch",
        scenario="single-stream",
        settings={
            "min_query_count": settings.min_queries,
            "min_duration_s": settings.min_duration_s,
        },
        batch_size=batch_size,
        samples=max(SAMPLES, batch_size),
        threads=settings.threads or None,
    )
    start = time.perf_counter()
    report = load_loadgen_report(bench(request, manifest, config))
    seconds = time.perf_counter() - start
    if report.sut_latency is None:
        raise ValueError(f"run {report.run_id}: its report holds no sut_latency")
    latency = report.sut_latency
    return WholeTiming(
        median_ms=float(latency.percentiles_ns["p50"]) / 1e6,
        queries=int(latency.count),
        loadgen_s=float(report.timings.get("loadgen_s", seconds)),
        seconds=seconds,
        host=dict(report.host),
        run_id=report.run_id,
        minor_faults=int(report.timings.get("loadgen_minor_faults", 0)),
    )
