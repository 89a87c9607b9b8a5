"""Preprocessing operations after decode: pure functions over a batch of images.

Before a crop makes sizes equal a batch is a list of HWC uint8 arrays; from ``normalize``
on it is one float32 array (N, H, W, C), and ``layout`` may turn it into NCHW. Each op
takes the batch and the step's parameters from the manifest and returns a new batch.
Decoding, the one step taken per file, is services/preprocess/decode.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from PIL import Image

from services.core.manifest_sections import (
    CastStep,
    CenterCropStep,
    LayoutStep,
    NormalizeStep,
    ResizeStep,
)

Batch = list[np.ndarray] | np.ndarray

# Pillow's filter for each ResizeStep.method (services/preprocess/decode.py resizes with it too).
PIL_RESAMPLE = {
    "nearest": Image.Resampling.NEAREST,
    "bilinear": Image.Resampling.BILINEAR,
    "bicubic": Image.Resampling.BICUBIC,
    "lanczos": Image.Resampling.LANCZOS,
}


def resize(batch: Batch, step: ResizeStep) -> list[np.ndarray]:
    out = []
    for image in batch:
        height, width = image.shape[:2]
        new_h, new_w = step.target_size(height, width)
        if (new_h, new_w) == (height, width):
            out.append(image)
            continue
        channels = image.shape[2]
        pil = Image.fromarray(image[..., 0] if channels == 1 else image)
        resized = np.asarray(pil.resize((new_w, new_h), resample=PIL_RESAMPLE[step.method]))
        out.append(resized[..., None] if channels == 1 else resized)
    return out


def resize_fast(batch: Batch, step: ResizeStep) -> list[np.ndarray]:
    """Bilinear resizes of 8-bit images by torch's SIMD kernel (antialiased as Pillow's,
    within one level of it; 0.27 vs 1.0 ms for 500x375 -> 341x256 here); other methods,
    other types, or no torch: Pillow's ``resize``."""
    try:
        import torch
    except ImportError:
        return resize(batch, step)
    if step.method != "bilinear":
        return resize(batch, step)
    out = []
    for image in batch:
        height, width = image.shape[:2]
        new_h, new_w = step.target_size(height, width)
        if image.dtype != np.uint8 or (new_h, new_w) == (height, width):
            out.extend(resize([image], step))
            continue
        # channels-last in memory, as the kernel's fast path wants it
        tensor = torch.from_numpy(image).permute(2, 0, 1)[None]
        resized = torch.nn.functional.interpolate(
            tensor, size=(new_h, new_w), mode="bilinear", antialias=True, align_corners=False
        )
        out.append(np.ascontiguousarray(resized[0].permute(1, 2, 0).numpy()))
    return out


def center_crop(batch: Batch, step: CenterCropStep) -> np.ndarray:
    out = []
    for image in batch:
        top, left, crop_h, crop_w = crop_box(image.shape[0], image.shape[1], step)
        out.append(image[top : top + crop_h, left : left + crop_w])
    return np.stack(out)


def crop_box(height: int, width: int, step: CenterCropStep) -> tuple[int, int, int, int]:
    """(top, left, crop height, crop width), rounded as torchvision's center_crop."""
    crop_h, crop_w = step.size if isinstance(step.size, tuple) else (step.size, step.size)
    if height < crop_h or width < crop_w:
        raise ValueError(
            f"center_crop: image of {height}x{width} is smaller than the crop "
            f"{crop_h}x{crop_w}; resize first"
        )
    return round((height - crop_h) / 2.0), round((width - crop_w) / 2.0), crop_h, crop_w


def crop_size(image: np.ndarray, resize: ResizeStep, crop: CenterCropStep) -> tuple[int, int]:
    """(height, width) of ``image`` after ``resize`` then ``crop``."""
    new_h, new_w = resize.target_size(*image.shape[:2])
    return crop_box(new_h, new_w, crop)[2:]


def resize_crop_into(
    out: np.ndarray, image: np.ndarray, resize: ResizeStep, crop: CenterCropStep
) -> None:
    """Write the bilinear resize then center crop of one 8-bit HWC image into ``out``
    (C, H, W), by torch's SIMD kernel, antialiased as Pillow's (within one level of it).

    Only the part of the resized image from its top-left corner to the crop's far edges
    is computed: the kernel is given the scale of the whole resize, so each pixel it does
    compute has the same source window and weights as in the whole resize (a test checks
    the bits), and the rows and columns below and right of the crop are never made
    (0.79 of the work for a 500x375 photo). A crop's near edges cannot be cut the same
    way: a slice starting inside the image moves the sampling grid by a fraction of a
    pixel. The crop is read out of torch's channels-last output in one small copy."""
    import torch

    height, width = image.shape[:2]
    new_h, new_w = resize.target_size(height, width)
    top, left, crop_h, crop_w = crop_box(new_h, new_w, crop)
    tensor = torch.from_numpy(image).permute(2, 0, 1)[None]  # channels-last in memory
    if (new_h, new_w) != (height, width):
        # Source pixels up to the crop's far edge, plus the filter's reach (bilinear: one
        # output pixel's width of source each side) and one for rounding.
        rows = min(height, math.ceil((top + crop_h + 1) * height / new_h) + 1)
        cols = min(width, math.ceil((left + crop_w + 1) * width / new_w) + 1)
        # aten's op under F.interpolate, which takes the output size and the scale apart;
        # the kernel reads the scale as output/input, as for the whole image.
        tensor = torch.ops.aten._upsample_bilinear2d_aa(
            tensor[:, :, :rows, :cols],
            [top + crop_h, left + crop_w],
            False,
            new_h / height,
            new_w / width,
        )
    out[...] = tensor[0, :, top : top + crop_h, left : left + crop_w].numpy()


def normalize_planar(batch: np.ndarray, step: NormalizeStep) -> np.ndarray:
    """``normalize`` of planar (N, C, H, W) pixels into planar float32, with the same
    float32 operations in the same order as ``normalize`` (so the same bits). On planar
    8-bit input this beats the lookup table: measured here, 0.13 vs 0.27 ms per 224x224
    image, since every pass is a contiguous SIMD loop and the lookup widens each index.
    One image at a time, so its three passes run over 0.6 MB that stay in cache rather
    than over the whole batch's floats (19 MB for 32 images) three times."""
    channels = batch.shape[1]
    if len(step.mean) != channels:
        raise ValueError(f"normalize: {len(step.mean)} mean values for {channels} channels")
    scale = np.float32(step.scale)
    mean = np.asarray(step.mean, dtype=np.float32)[:, None, None]
    std = np.asarray(step.std, dtype=np.float32)[:, None, None]
    out = np.empty(batch.shape, dtype=np.float32)
    for pixels, target in zip(batch, out, strict=True):
        # The cast to float32 happens inside the first pass (the same values as astype).
        np.divide(pixels, scale, out=target, dtype=np.float32)
        np.subtract(target, mean, out=target)
        np.divide(target, std, out=target)
    return out


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


def _normalize_table(step: NormalizeStep, channels: int) -> np.ndarray:
    """(256, channels) float32: each 8-bit value normalized, with the same float32
    operations in the same order as the array path (so the same bits)."""
    if len(step.mean) != channels:
        raise ValueError(f"normalize: {len(step.mean)} mean values for {channels} channels")
    table = np.arange(256, dtype=np.float32)[:, None].repeat(channels, axis=1)
    np.divide(table, np.float32(step.scale), out=table)
    np.subtract(table, np.asarray(step.mean, dtype=np.float32), out=table)
    np.divide(table, np.asarray(step.std, dtype=np.float32), out=table)
    return table


def normalize(batch: Batch, step: NormalizeStep) -> np.ndarray:
    stacked = _stacked(batch)
    channels = stacked.shape[-1]
    if stacked.dtype == np.uint8:
        # 8-bit pixels take 256 values per channel: compute each result once, then look
        # every pixel up: one pass over the batch instead of a conversion and three
        # arithmetic passes.
        table = _normalize_table(step, channels)
        out = np.empty(stacked.shape, dtype=np.float32)
        for channel in range(channels):
            np.take(table[:, channel], stacked[..., channel], out=out[..., channel])
        return out
    if len(step.mean) != channels:
        raise ValueError(f"normalize: {len(step.mean)} mean values for {channels} channels")
    mean = np.asarray(step.mean, dtype=np.float32)
    std = np.asarray(step.std, dtype=np.float32)
    array = stacked.astype(np.float32)
    # In place: the same float32 operations in the same order as (x / scale - mean) / std
    # (so results stay bit-identical to torchvision's ToTensor + Normalize), without the
    # two temporaries a batch-sized expression allocates.
    np.divide(array, np.float32(step.scale), out=array)
    np.subtract(array, mean, out=array)
    np.divide(array, std, out=array)
    return array


def normalize_to_nchw(batch: Batch, step: NormalizeStep) -> np.ndarray:
    """``normalize`` then an NCHW ``layout`` in one pass for 8-bit pixels: each channel's
    lookup writes its plane of the output directly (the same bits as the two steps,
    without the float32 batch they pass between them: 0.47 -> 0.31 ms per 224x224 image
    here)."""
    stacked = _stacked(batch)
    if stacked.dtype != np.uint8:
        return layout(normalize(stacked, step), LayoutStep(op="layout", order="NCHW"))
    channels = stacked.shape[-1]
    table = _normalize_table(step, channels)
    count, height, width = stacked.shape[:3]
    out = np.empty((count, channels, height, width), dtype=np.float32)
    for channel in range(channels):
        np.take(table[:, channel], stacked[..., channel], out=out[:, channel])
    return out


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
# What Input.fidelity "fast" runs instead.
FAST_BATCH_OPS: dict[str, Callable[[Batch, Any], Batch]] = {**BATCH_OPS, "resize": resize_fast}
