"""Time training steps of a model on synthetic tensors; warm-up steps are excluded."""

from __future__ import annotations

import resource
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from services.workloads.training.data_sources import BatchSource, image_folder, synthetic
from services.workloads.training.step_timing import StepStatistics, summarise, timed_loop


@dataclass(frozen=True)
class TrainingSettings:
    model: str
    steps: int
    batch_size: int
    warmup: int
    image_size: int
    precision: str
    optimizer: str
    data: str
    threads: int
    device: str
    # Recorded in every report; the default keeps torch-only callers (scaling) as they were.
    framework: str = "torch"


@dataclass(frozen=True)
class TrainingResult:
    settings: TrainingSettings
    statistics: StepStatistics
    peak_rss_bytes: int
    cuda_max_allocated_bytes: int | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "settings": asdict(self.settings),
            "statistics": asdict(self.statistics),
            "peak_rss_bytes": self.peak_rss_bytes,
            "cuda_max_allocated_bytes": self.cuda_max_allocated_bytes,
            "definitions": {
                "mean_images_per_s": "mean over measured steps of batch size / step seconds",
                "standard_error_images_per_s": "sample std of per-step images/s / sqrt(steps)",
                "jitter": "mean |step time difference| of consecutive steps / mean step time",
                "data_share": "time getting the batch / total step time",
            },
        }


def build_model(name: str) -> Any:
    from services.inference.backends.torch.architectures import build_architecture

    spec = (
        name
        if ":" in name
        else ("benchstack:digits_cnn" if name == "digits" else f"torchvision:{name}")
    )
    return build_architecture(spec)


def make_optimiser(settings: TrainingSettings, model: Any) -> Any:
    import torch

    if settings.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return torch.optim.Adam(model.parameters(), lr=1e-3)


def timed_steps(
    settings: TrainingSettings, model: Any, next_batch: BatchSource, device: Any
) -> tuple[list[float], list[float]]:
    """(step seconds, data seconds) of the measured steps, after ``settings.warmup``."""
    import torch
    from torch import nn

    optimiser = make_optimiser(settings, model)
    loss_fn = nn.CrossEntropyLoss()
    autocast_dtype = torch.bfloat16 if settings.precision == "bf16" else None

    def fetch() -> tuple[Any, Any]:
        # A folder's batches are read and copied here each step: that time is the data
        # share. Synthetic ones already sit on the device, so .to() returns them as they are.
        images, labels = next_batch()
        return images.to(device), labels.to(device)

    def train_step(batch: tuple[Any, Any]) -> None:
        images, labels = batch
        optimiser.zero_grad()
        with torch.autocast(
            device.type, dtype=autocast_dtype or torch.float32, enabled=autocast_dtype is not None
        ):
            loss = loss_fn(model(images), labels)
        loss.backward()  # under DistributedDataParallel, this waits for the gradient all-reduce
        optimiser.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    return timed_loop(settings.warmup, settings.steps, fetch, train_step)


def channels_of(model_name: str) -> int:
    return 1 if model_name == "digits" else 3


def batch_source(settings: TrainingSettings, seed: int = 0, device: str = "cpu") -> BatchSource:
    channels, classes = channels_of(settings.model), 10
    if settings.data == "synthetic":
        return synthetic(
            settings.batch_size, channels, settings.image_size, classes, seed=seed, device=device
        )
    return image_folder(
        Path(settings.data), settings.batch_size, channels, settings.image_size, classes
    )


def run(settings: TrainingSettings) -> TrainingResult:
    import torch

    torch.set_num_threads(settings.threads)
    device = torch.device(settings.device)
    model = build_model(settings.model).to(device).train()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    step_seconds, data_seconds = timed_steps(
        settings, model, batch_source(settings, device=str(device)), device
    )
    # ru_maxrss is in KiB on Linux.
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    cuda_peak = int(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else None
    return TrainingResult(
        settings, summarise(step_seconds, data_seconds, settings.batch_size), peak_rss, cuda_peak
    )
