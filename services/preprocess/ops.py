"""Preprocessing operations: pure functions over a batch of images.

Before a crop makes sizes equal a batch is a list of HWC uint8 arrays; from ``normalize``
on it is one float32 array (N, H, W, C), and ``layout`` may turn it into NCHW. Each op
takes the batch and the step's parameters from the manifest and returns a new batch.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import numpy as np
from PIL import Image

from shared.manifest import (
    CastStep,
    CenterCropStep,
    DecodeStep,
    LayoutStep,
    NormalizeStep,
    ResizeStep,
)

Batch = list[np.ndarray] | np.ndarray

_RESAMPLE = {
    "nearest": Image.Resampling.NEAREST,
    "bilinear": Image.Resampling.BILINEAR,
    "bicubic": Image.Resampling.BICUBIC,
    "lanczos": Image.Resampling.LANCZOS,
}


class DecodeError(ValueError):
    """One sample's bytes are not a readable image."""


def decode_one(data: bytes, step: DecodeStep) -> np.ndarray:
    try:
        with Image.open(io.BytesIO(data)) as image:
            mode = "RGB" if step.color_mode == "BGR" else step.color_mode
            array = np.asarray(image.convert(mode))
    except Exception as exc:  # PIL raises many types for bad files
        raise DecodeError(f"cannot decode image: {exc}") from exc
    if step.color_mode == "BGR":
        array = array[..., ::-1]
    if array.ndim == 2:
        array = array[..., None]
    return np.ascontiguousarray(array)


def _target_size(height: int, width: int, step: ResizeStep) -> tuple[int, int]:
    if isinstance(step.size, tuple):
        return step.size
    if not step.keep_aspect:
        return step.size, step.size
    # Shorter side to `size`, the other scaled to keep the aspect ratio (torchvision's rule).
    if height <= width:
        return step.size, int(step.size * width / height)
    return int(step.size * height / width), step.size


def resize(batch: Batch, step: ResizeStep) -> list[np.ndarray]:
    out = []
    for image in batch:
        height, width = image.shape[:2]
        new_h, new_w = _target_size(height, width, step)
        if (new_h, new_w) == (height, width):
            out.append(image)
            continue
        channels = image.shape[2]
        pil = Image.fromarray(image[..., 0] if channels == 1 else image)
        resized = np.asarray(pil.resize((new_w, new_h), resample=_RESAMPLE[step.method]))
        out.append(resized[..., None] if channels == 1 else resized)
    return out


def center_crop(batch: Batch, step: CenterCropStep) -> np.ndarray:
    crop_h, crop_w = step.size if isinstance(step.size, tuple) else (step.size, step.size)
    out = []
    for image in batch:
        height, width = image.shape[:2]
        if height < crop_h or width < crop_w:
            raise ValueError(
                f"center_crop: image of {height}x{width} is smaller than the crop "
                f"{crop_h}x{crop_w}; resize first"
            )
        # Same rounding as torchvision's center_crop.
        top = round((height - crop_h) / 2.0)
        left = round((width - crop_w) / 2.0)
        out.append(image[top : top + crop_h, left : left + crop_w])
    return np.stack(out)


def _stacked(batch: Batch) -> np.ndarray:
    if isinstance(batch, np.ndarray):
        return batch
    shapes = {image.shape for image in batch}
    if len(shapes) != 1:
        raise ValueError(
            f"images have different sizes {sorted(shapes)}; add a resize with both sides "
            "or a center_crop before this step"
        )
    return np.stack(batch)


def normalize(batch: Batch, step: NormalizeStep) -> np.ndarray:
    array = _stacked(batch).astype(np.float32)
    channels = array.shape[-1]
    if len(step.mean) != channels:
        raise ValueError(f"normalize: {len(step.mean)} mean values for {channels} channels")
    mean = np.asarray(step.mean, dtype=np.float32)
    std = np.asarray(step.std, dtype=np.float32)
    return (array / np.float32(step.scale) - mean) / std


def layout(batch: Batch, step: LayoutStep) -> np.ndarray:
    array = _stacked(batch)
    if step.order == "NCHW":
        return np.ascontiguousarray(array.transpose(0, 3, 1, 2))
    return np.ascontiguousarray(array)


def cast(batch: Batch, step: CastStep) -> np.ndarray:
    return _stacked(batch).astype(step.element_type)


# Steps after decode, by name; decode is per sample because it is where errors are per file.
BATCH_OPS: dict[str, Callable[[Batch, Any], Batch]] = {
    "resize": resize,
    "center_crop": center_crop,
    "normalize": normalize,
    "layout": layout,
    "cast": cast,
}
