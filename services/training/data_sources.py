"""Batches for a training step: synthetic tensors or an image folder read through the
project's own preprocessing (decode, resize, center crop, normalize, NCHW)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from shared.manifest import Input

BatchSource = Callable[[], tuple[Any, Any]]


def image_input(size: int, channels: int) -> Input:
    """The preprocessing a training run applies to a folder image (ImageNet-style)."""
    mean, std = ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]) if channels == 3 else ([0.5], [0.5])
    return Input.model_validate(
        {
            "shape": [channels, size, size],
            "steps": [
                {"decode": {"color_mode": "RGB" if channels == 3 else "L"}},
                {"resize": {"size": size, "method": "bilinear", "keep_aspect": True}},
                {"center_crop": {"size": size}},
                {"normalize": {"mean": mean, "std": std, "scale": 255.0}},
                {"layout": {"order": "NCHW"}},
            ],
        }
    )


def synthetic(
    batch_size: int, channels: int, size: int, classes: int, seed: int = 0
) -> BatchSource:
    import torch

    generator = torch.Generator().manual_seed(seed)

    def next_batch() -> tuple[Any, Any]:
        images = torch.randn((batch_size, channels, size, size), generator=generator)
        labels = torch.randint(0, classes, (batch_size,), generator=generator)
        return images, labels

    return next_batch


def image_folder(
    root: Path, batch_size: int, channels: int, size: int, classes: int
) -> BatchSource:
    """Cycles through the folder's images; each batch is decoded and preprocessed when asked."""
    import torch

    from services.preprocess.datasets import DatasetError, scan_folder
    from services.preprocess.pipeline import preprocess_batch

    if not root.is_dir():
        raise DatasetError(f"--data: {root} is not a folder; pass 'synthetic' or an image folder")
    samples, _ = scan_folder(root)
    if not samples:
        raise DatasetError(f"--data: {root} holds no images")
    spec = image_input(size, channels)
    position = 0

    def next_batch() -> tuple[Any, Any]:
        nonlocal position
        chosen = [samples[(position + i) % len(samples)] for i in range(batch_size)]
        position = (position + batch_size) % len(samples)
        array, kept, errors = preprocess_batch(chosen, spec)
        if array is None or errors:
            raise DatasetError(f"--data: cannot read {errors[0].sample_id if errors else root}")
        labels = np.array([(s.label or 0) % classes for s in kept], dtype=np.int64)
        return torch.from_numpy(np.ascontiguousarray(array)), torch.from_numpy(labels)

    return next_batch
