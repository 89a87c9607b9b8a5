"""Preprocessing operations: pure functions over a batch of images.

Before a crop makes sizes equal a batch is a list of HWC uint8 arrays; from ``normalize``
on it is one float32 array (N, H, W, C), and ``layout`` may turn it into NCHW. Each op
takes the batch and the step's parameters from the manifest and returns a new batch.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

from shared.manifest_sections import (
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


# An image is decoded at a reduced JPEG scale only while that keeps at least this many
# times the resize target on each side, so the final resample still does the smoothing and
# the result stays within a pixel level or two of a full decode.
DRAFT_MARGIN = 2
JPEG_MAGIC = b"\xff\xd8"
PIXEL_BUDGET_SETTING = "BENCHSTACK_MAX_IMAGE_PIXELS"


class DecodeError(ValueError):
    """One sample's bytes are not a readable image, or too large to decode."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"{name}: {reason}")


def _megapixels(pixels: int) -> str:
    return f"{pixels / 1e6:.1f} megapixels"


def _draft_size(image: Image.Image, resize: ResizeStep | None) -> tuple[int, int] | None:
    """(width, height) to ask JPEG draft decoding for, or None to decode at full size."""
    if resize is None or image.format != "JPEG":
        return None
    width, height = image.size
    target_h, target_w = resize.target_size(height, width)
    return target_w * DRAFT_MARGIN, target_h * DRAFT_MARGIN


def decode_one(
    data: bytes,
    step: DecodeStep,
    *,
    name: str,
    max_pixels: int,
    resize: ResizeStep | None = None,
    fast: bool = False,
    resize_now: bool = False,
) -> np.ndarray:
    """Decode one image; ``name`` (its file) is what errors say.

    The size is read from the header and checked against ``max_pixels`` before any pixel
    is decoded. ``fast`` decodes JPEGs with libjpeg-turbo through simplejpeg
    (``_decode_jpeg_fast``: Pillow's pixels, without its per-image overhead); everything
    else goes through Pillow as torchvision's pipeline does. With ``resize_now``, Pillow
    applies ``resize`` to the image it decoded (the same operation as the resize step,
    without two copies through an array).
    """
    if fast and data[:2] == JPEG_MAGIC:
        array = _decode_jpeg_fast(data, step, name=name, max_pixels=max_pixels, resize=resize)
        return resize_fast([array], resize)[0] if resize_now and resize else array
    return _decode_with_pillow(
        data, step, name=name, max_pixels=max_pixels, resize=resize, resize_now=resize_now
    )


def _over_budget(name: str, full: tuple[int, int], scaled: tuple[int, int], budget: int) -> None:
    width, height = scaled
    if width * height <= budget:
        return
    note = "" if scaled == full else f", {width}x{height} at reduced scale"
    raise DecodeError(
        name,
        f"image of {full[0]}x{full[1]} pixels{note} ({_megapixels(width * height)}) is over "
        f"the budget of {_megapixels(budget)} per image; accepted: smaller images, or a "
        f"larger {PIXEL_BUDGET_SETTING}",
    )


def _dct_denominator(full_h: int, full_w: int, resize: ResizeStep | None) -> int:
    """N of the 1/N scale (8, 4, 2 or 1) to decode a JPEG at before ``resize``: Pillow's
    draft rule for a draft of DRAFT_MARGIN times the target (the largest N that leaves
    the image at least that large), which the reference mode uses, so both modes decode
    the same pixels. libjpeg-turbo's IDCT has SIMD code for these scales only. Decoding
    down to the target itself, as this mode once did, filters as a 4x4 IDCT does, not as
    an antialiased resize: it moved the logits of a batch-norm-calibrated random model
    (benchmarks/preprocess_throughput.py) by up to 1.17 on a 512x600 photo, against 0.02
    at most over six real photos with this rule."""
    if resize is None:
        return 1
    target_h, target_w = resize.target_size(full_h, full_w)
    ratio = min(full_w // (target_w * DRAFT_MARGIN), full_h // (target_h * DRAFT_MARGIN))
    return next((denominator for denominator in (8, 4, 2) if ratio >= denominator), 1)


def _decode_jpeg_fast(
    data: bytes, step: DecodeStep, *, name: str, max_pixels: int, resize: ResizeStep | None
) -> np.ndarray:
    import simplejpeg

    try:
        full_h, full_w, _, _ = simplejpeg.decode_jpeg_header(data)
    except ValueError as exc:
        raise DecodeError(name, f"cannot decode image: {exc}") from exc
    denominator = _dct_denominator(full_h, full_w, resize)
    scaled_h, scaled_w = -(-full_h // denominator), -(-full_w // denominator)
    _over_budget(name, (full_w, full_h), (scaled_w, scaled_h), max_pixels)
    colorspace = {"RGB": "RGB", "BGR": "BGR", "L": "GRAY"}[step.color_mode]
    try:
        # libjpeg-turbo's accurate IDCT and smooth chroma upsampling, as Pillow decodes:
        # the same pixels, for 3 to 10 % more time than its fast settings, which put
        # chroma edges up to 119 levels off (photo-like 4:2:0 JPEG). The smallest scale
        # at least scaled_h x scaled_w is 1/denominator itself.
        array = simplejpeg.decode_jpeg(
            data,
            colorspace=colorspace,
            fastdct=False,
            fastupsample=False,
            min_height=scaled_h,
            min_width=scaled_w,
        )
    except ValueError as exc:
        raise DecodeError(name, f"cannot decode image: {exc}") from exc
    _over_budget(name, (full_w, full_h), (array.shape[1], array.shape[0]), max_pixels)
    if array.ndim == 2:
        array = array[..., None]
    return np.ascontiguousarray(array)


def _decode_with_pillow(
    data: bytes,
    step: DecodeStep,
    *,
    name: str,
    max_pixels: int,
    resize: ResizeStep | None = None,
    resize_now: bool = False,
) -> np.ndarray:
    """Decode one image; ``name`` (its file) is what errors say.

    The size is read from the header and checked against ``max_pixels`` before any pixel
    is decoded. When ``resize`` comes next, a JPEG much larger than its target is decoded
    at 1/2, 1/4 or 1/8 scale (Pillow's draft mode), never below ``DRAFT_MARGIN`` times
    the target, so a folder of huge photos cannot exhaust memory.
    """
    mode = "RGB" if step.color_mode == "BGR" else step.color_mode
    try:
        with Image.open(io.BytesIO(data)) as image:
            full_w, full_h = image.size
            draft = _draft_size(image, resize)
            if draft is not None:
                image.draft(mode, draft)
            width, height = image.size
            if width * height > max_pixels:
                scaled = "" if image.size == (full_w, full_h) else f", {width}x{height} drafted"
                raise DecodeError(
                    name,
                    f"image of {full_w}x{full_h} pixels{scaled} "
                    f"({_megapixels(width * height)}) is over the budget of "
                    f"{_megapixels(max_pixels)} per image; accepted: smaller images, or a "
                    f"larger {PIXEL_BUDGET_SETTING}",
                )
            converted = image.convert(mode)
            if resize_now and resize is not None:
                new_h, new_w = resize.target_size(height, width)
                if (new_h, new_w) != (height, width):
                    converted = converted.resize((new_w, new_h), resample=_RESAMPLE[resize.method])
            array = np.asarray(converted)
    except DecodeError:
        raise
    except Image.DecompressionBombError as exc:
        # Pillow's own ceiling, checked as the header is read, above any budget we set.
        raise DecodeError(name, f"refused by Pillow before decoding: {exc}") from exc
    except UnidentifiedImageError as exc:
        # Pillow's message names the in-memory buffer, not the file: say it ourselves.
        raise DecodeError(
            name, "cannot decode image: not a format Pillow recognises (JPEG, PNG, ...)"
        ) from exc
    except Exception as exc:  # PIL raises many types for damaged files
        raise DecodeError(name, f"cannot decode image: {exc}") from exc
    if step.color_mode == "BGR":
        array = array[..., ::-1]
    if array.ndim == 2:
        array = array[..., None]
    return np.ascontiguousarray(array)


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
        resized = np.asarray(pil.resize((new_w, new_h), resample=_RESAMPLE[step.method]))
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
        top, left, crop_h, crop_w = _crop_box(image.shape[0], image.shape[1], step)
        out.append(image[top : top + crop_h, left : left + crop_w])
    return np.stack(out)


def _crop_box(height: int, width: int, step: CenterCropStep) -> tuple[int, int, int, int]:
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
    return _crop_box(new_h, new_w, crop)[2:]


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
    top, left, crop_h, crop_w = _crop_box(new_h, new_w, crop)
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
