"""Time training steps of a model on synthetic tensors or an image folder; warm-up steps are
excluded. Every result keeps its raw step times (step_timing.TimedSteps), so each figure can
be recomputed from what the report stores."""

from __future__ import annotations

import resource
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from services.workloads.training.data_sources import BatchSource, image_folder, synthetic
from services.workloads.training.step_timing import (
    DEFAULT_DISPLAY_EVERY,
    DEFINITIONS,
    StepLog,
    StepStatistics,
    TimedSteps,
    summarise,
    timed_loop,
)

# Every framework's model gets the same classifier head (issue 33: Keras trained 10
# classes where torch kept torchvision's 1000): ImageNet's 1000 classes, as torchvision
# builds its models, except the digits CNN, whose head is its 10 digits.
IMAGENET_CLASSES = 1000
DIGITS_CLASSES = 10


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
    # A progress line every this many measured steps (0: none); kept in the report too.
    display_every: int = DEFAULT_DISPLAY_EVERY

    @property
    def classes(self) -> int:
        return classes_of(self.model)


def classes_of(model_name: str) -> int:
    """The classifier head's class count, the same in every framework."""
    return DIGITS_CLASSES if model_name == "digits" else IMAGENET_CLASSES


def settings_dict(settings: TrainingSettings) -> dict[str, Any]:
    """The settings as a report states them, the model head's class count included."""
    return {**asdict(settings), "classes": settings.classes}


@dataclass(frozen=True)
class TrainingResult:
    settings: TrainingSettings
    statistics: StepStatistics
    peak_rss_bytes: int
    cuda_max_allocated_bytes: int | None
    # The raw step times and progress lines the statistics come from.
    timed: TimedSteps = field(default_factory=lambda: TimedSteps([], [], []))

    def as_dict(self) -> dict[str, Any]:
        return {
            "settings": settings_dict(self.settings),
            "statistics": self.statistics.as_dict(),
            "step_seconds": self.timed.step_seconds,
            "data_seconds": self.timed.data_seconds,
            "log": [line.as_dict() for line in self.timed.log],
            "peak_rss_bytes": self.peak_rss_bytes,
            "cuda_max_allocated_bytes": self.cuda_max_allocated_bytes,
            "definitions": DEFINITIONS,
        }


def result_of(
    settings: TrainingSettings,
    timed: TimedSteps,
    peak_rss_bytes: int,
    cuda_max_allocated_bytes: int | None = None,
    images_per_step: int | None = None,
) -> TrainingResult:
    """A result whose statistics are those of ``timed``'s steps (``images_per_step``: the
    images one step trains, the batch size unless several workers share the step)."""
    figures = summarise(
        timed.step_seconds, timed.data_seconds, images_per_step or settings.batch_size
    )
    return TrainingResult(settings, figures, peak_rss_bytes, cuda_max_allocated_bytes, timed)


def build_model(name: str) -> Any:
    """The torch model, its head of ``classes_of(name)`` classes (torchvision's default)."""
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
    settings: TrainingSettings,
    model: Any,
    next_batch: BatchSource,
    device: Any,
    show: Callable[[StepLog], None] | None = None,
    images_per_step: int | None = None,
) -> TimedSteps:
    """The measured steps, after ``settings.warmup``; progress lines go to ``show``."""
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

    def train_step(batch: tuple[Any, Any]) -> Any:
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
        return loss.detach()  # read (float) only on a progress line, after the timer

    return timed_loop(
        settings.warmup,
        settings.steps,
        fetch,
        train_step,
        batch_size=images_per_step or settings.batch_size,
        display_every=settings.display_every,
        show=show,
    )


def channels_of(model_name: str) -> int:
    return 1 if model_name == "digits" else 3


def batch_source(settings: TrainingSettings, seed: int = 0, device: str = "cpu") -> BatchSource:
    channels, classes = channels_of(settings.model), settings.classes
    if settings.data == "synthetic":
        return synthetic(
            settings.batch_size, channels, settings.image_size, classes, seed=seed, device=device
        )
    return image_folder(
        Path(settings.data), settings.batch_size, channels, settings.image_size, classes
    )


def run(
    settings: TrainingSettings, show: Callable[[StepLog], None] | None = None
) -> TrainingResult:
    import torch

    torch.set_num_threads(settings.threads)
    device = torch.device(settings.device)
    model = build_model(settings.model).to(device).train()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    timed = timed_steps(settings, model, batch_source(settings, device=str(device)), device, show)
    # ru_maxrss is in KiB on Linux.
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    cuda_peak = int(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else None
    return result_of(settings, timed, peak_rss, cuda_peak)
