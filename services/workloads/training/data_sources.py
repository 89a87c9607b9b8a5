"""Batches for a training step: synthetic tensors or an image folder read through the
project's own preprocessing (decode, resize, center crop, normalize, then NCHW for torch or
NHWC for Keras). The folder reader and the synthetic maker return numpy arrays; the torch
sources wrap them as tensors, the Keras path takes them as they are."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from services.core.manifest_sections import Input

BatchSource = Callable[[], tuple[Any, Any]]
ArrayBatchSource = Callable[[], tuple[np.ndarray, np.ndarray]]
LAYOUTS = ("NCHW", "NHWC")


def image_input(size: int, channels: int, layout: str = "NCHW") -> Input:
    """The preprocessing a training run applies to a folder image (ImageNet-style)."""
    mean, std = ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]) if channels == 3 else ([0.5], [0.5])
    if layout not in LAYOUTS:
        raise ValueError(f"layout: {layout!r} is not accepted; use one of {', '.join(LAYOUTS)}")
    shape = [channels, size, size] if layout == "NCHW" else [size, size, channels]
    return Input.model_validate(
        {
            "shape": shape,
            "steps": [
                {"decode": {"color_mode": "RGB" if channels == 3 else "L"}},
                {"resize": {"size": size, "method": "bilinear", "keep_aspect": True}},
                {"center_crop": {"size": size}},
                {"normalize": {"mean": mean, "std": std, "scale": 255.0}},
                {"layout": {"order": layout}},
            ],
        }
    )


SYNTHETIC_POOL = 4


def synthetic(
    batch_size: int,
    channels: int,
    size: int,
    classes: int,
    seed: int = 0,
    device: str = "cpu",
    pool: int = SYNTHETIC_POOL,
) -> BatchSource:
    """Random batches made once, where the model trains, and drawn in turn.

    Making them each step would time the random generator (on a GPU, one core's randn and a
    pageable copy took 79 % of a resnet18 step on an H200), not the model: synthetic data
    stands for an input pipeline that keeps up, as in tf_cnn_benchmarks. A few distinct
    batches rather than one, so no step reuses the previous step's input.
    """
    import torch

    generator = torch.Generator().manual_seed(seed)
    batches = [
        (
            torch.randn((batch_size, channels, size, size), generator=generator).to(device),
            torch.randint(0, classes, (batch_size,), generator=generator).to(device),
        )
        for _ in range(pool)
    ]
    return itertools.cycle(batches).__next__


def synthetic_arrays(
    batch_size: int, shape: tuple[int, ...], classes: int, seed: int = 0, pool: int = SYNTHETIC_POOL
) -> ArrayBatchSource:
    """Random float32 images of ``shape`` (per sample, in the model's layout) and labels,
    made once and drawn in turn, as ``synthetic`` does for torch."""
    generator = np.random.default_rng(seed)
    batches = [
        (
            generator.standard_normal((batch_size, *shape), dtype=np.float32),
            generator.integers(0, classes, (batch_size,), dtype=np.int64),
        )
        for _ in range(pool)
    ]
    return itertools.cycle(batches).__next__


def folder_arrays(
    root: Path, batch_size: int, channels: int, size: int, classes: int, layout: str = "NCHW"
) -> ArrayBatchSource:
    """Cycles through the folder's images; each batch is decoded and preprocessed when asked."""
    from services.preprocess.datasets import DatasetError, scan_folder
    from services.preprocess.pipeline import preprocess_batch

    if not root.is_dir():
        raise DatasetError(f"--data: {root} is not a folder; pass 'synthetic' or an image folder")
    samples, _ = scan_folder(root)
    if not samples:
        raise DatasetError(f"--data: {root} holds no images")
    spec = image_input(size, channels, layout)
    position = 0

    def next_batch() -> tuple[np.ndarray, np.ndarray]:
        nonlocal position
        chosen = [samples[(position + i) % len(samples)] for i in range(batch_size)]
        position = (position + batch_size) % len(samples)
        array, kept, errors = preprocess_batch(chosen, spec)
        if array is None or errors:
            raise DatasetError(f"--data: cannot read {errors[0].sample_id if errors else root}")
        labels = np.array([(s.label or 0) % classes for s in kept], dtype=np.int64)
        return np.ascontiguousarray(array), labels

    return next_batch


def image_folder(
    root: Path, batch_size: int, channels: int, size: int, classes: int
) -> BatchSource:
    """Torch tensors (NCHW) from the folder's images, read as ``folder_arrays`` reads them."""
    import torch

    arrays = folder_arrays(root, batch_size, channels, size, classes, "NCHW")

    def next_batch() -> tuple[Any, Any]:
        images, labels = arrays()
        return torch.from_numpy(images), torch.from_numpy(labels)

    return next_batch
