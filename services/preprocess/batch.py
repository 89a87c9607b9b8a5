"""One batch of samples through a manifest input's steps: each file decoded (its errors
kept per file), then the batch ops in manifest order, or, in the fast mode's common
classification spec, the fused path that resizes and crops each image into its row as it
is decoded. services/preprocess/pipeline.py runs every batch of a dataset through here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from services.core.manifest_checks import shape_mismatch
from services.core.manifest_sections import (
    CenterCropStep,
    DecodeStep,
    Input,
    LayoutStep,
    NormalizeStep,
    ResizeStep,
)
from services.preprocess.datasets import Sample, SampleError
from services.preprocess.decode import DecodeError, decode_one
from services.preprocess.ops import (
    BATCH_OPS,
    FAST_BATCH_OPS,
    crop_size,
    normalize_planar,
    normalize_to_nchw,
    resize_crop_into,
)
from services.preprocess.sample_files import FileRefused, read_bounded
from services.preprocess.sizes import OutputBounds
from shared.settings import get_settings


def _decode_step(spec: Input) -> DecodeStep:
    first = spec.steps[0] if spec.steps else None
    return first if isinstance(first, DecodeStep) else DecodeStep(op="decode")


def _resize_after_decode(spec: Input) -> ResizeStep | None:
    """The resize straight after decode, whose target lets a large JPEG decode smaller."""
    second = spec.steps[1] if len(spec.steps) > 1 else None
    return second if isinstance(second, ResizeStep) else None


def deferred_normalize(spec: Input) -> NormalizeStep | None:
    """The normalize step a stored shard leaves for its reader, or None.

    In the fast mode's fused path (decode, bilinear resize, center crop, normalize, NCHW)
    a shard holds the planar 8-bit crops, four times smaller than float32 in the object
    store and in transit, and ``finish`` normalizes them where the shard is loaded (the
    QSL's untimed load callback). Same bits as normalizing before storing (a test checks)."""
    if spec.fidelity != "fast":
        return None
    steps = planar_steps(spec)
    return steps[2] if steps is not None else None


def finish(tensors: np.ndarray, spec: Input) -> np.ndarray:
    """Tensors as the model takes them, from a shard in its stored form (see
    ``deferred_normalize``). A shard stored already normalized is returned as it is."""
    step = deferred_normalize(spec)
    if step is None or tensors.dtype != np.uint8:
        return tensors
    return normalize_planar(tensors, step).astype(spec.element_type, copy=False)


def preprocess_batch(
    samples: Sequence[Sample],
    spec: Input,
    *,
    max_image_pixels: int | None = None,
    stored: bool = False,
    rows: np.ndarray | None = None,
) -> tuple[np.ndarray | None, list[Sample], list[SampleError]]:
    """Decode each sample (errors per file), then apply the batch ops in manifest order.

    ``stored``: the form a shard keeps (``deferred_normalize``): 8-bit crops where the
    fused path runs, otherwise the finished tensors.
    ``rows``: one row per sample, which the fused path's 8-bit crops are written into
    (the result is then a view of its first rows) when they fit it; otherwise unused."""
    settings = get_settings()
    budget = Budget(max_image_pixels or settings.max_image_pixels, OutputBounds.of(spec, settings))
    decode = _decode_step(spec)
    fused_steps = planar_steps(spec) if spec.fidelity == "fast" else None
    if fused_steps is not None and torch_importable():
        streamed = _fused_fast_path(samples, spec, decode, fused_steps, budget, stored, rows)
        if streamed is not None:
            return streamed
    return _step_by_step(samples, spec, decode, budget)


@dataclass(frozen=True)
class Budget:
    """What one image may be decoded to (pixels), and what its steps may make of it."""

    max_pixels: int
    outputs: OutputBounds


def torch_importable() -> bool:
    """Whether the fused path's resize (torch's 8-bit kernel) can run; without torch the
    fast mode goes step by step, resizing with Pillow."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def read_sample(sample: Sample, max_bytes: int | None = None) -> bytes:
    """The sample's file, whole; DecodeError naming it when it cannot be read, links out
    of its folder, or holds more than ``max_bytes`` (default: the ``max_sample_bytes``
    setting, which the scheduler's hashing applies too), checked before it is read."""
    bound = max_bytes if max_bytes is not None else get_settings().max_sample_bytes
    try:
        return read_bounded(sample, bound)
    except FileRefused as exc:
        raise DecodeError(sample.id, exc.reason) from None


def _read_and_decode(
    sample: Sample,
    decode: DecodeStep,
    budget: Budget,
    *,
    resize: ResizeStep | None,
    fast: bool,
    resize_now: bool,
) -> np.ndarray:
    """One sample's pixels; DecodeError for a file that cannot be read or decoded."""
    return decode_one(
        read_sample(sample),
        decode,
        name=sample.id,
        max_pixels=budget.max_pixels,
        resize=resize,
        fast=fast,
        resize_now=resize_now,
        bounds=budget.outputs,
    )


def _fused_fast_path(
    samples: Sequence[Sample],
    spec: Input,
    decode: DecodeStep,
    steps: tuple[ResizeStep, CenterCropStep, NormalizeStep],
    budget: Budget,
    stored: bool,
    rows: np.ndarray | None = None,
) -> tuple[np.ndarray | None, list[Sample], list[SampleError]] | None:
    """decode -> resize -> center_crop -> normalize -> NCHW, the common classification
    spec, one image at a time: each is decoded, resized and cropped into its row of one
    planar 8-bit array (ops.resize_crop_into) before the next is decoded, so a batch holds
    one decoded image at a time, not all of them (the allocator reuses its memory instead
    of faulting in fresh pages for each), then normalized in one pass (finish) unless the
    shard keeps the 8-bit form. None when an image is not 8-bit with the first one's
    channels (the steps one by one handle it)."""
    resize, crop, _ = steps
    out: np.ndarray | None = None
    kept: list[Sample] = []
    errors: list[SampleError] = []
    first: np.ndarray | None = None
    for sample in samples:
        try:
            image = _read_and_decode(
                sample, decode, budget, resize=resize, fast=True, resize_now=False
            )
        except DecodeError as exc:
            errors.append(SampleError(sample.id, exc.reason))
            continue
        first = image if first is None else first
        if not _fits_fused_path(image, first):
            return None
        if out is None:
            crop_h, crop_w = crop_size(image, resize, crop)
            shape = (len(samples), image.shape[2], crop_h, crop_w)
            if rows is not None and rows.shape == shape and rows.dtype == np.uint8:
                out = rows
            else:
                out = np.empty(shape, dtype=np.uint8)
        resize_crop_into(out[len(kept)], image, resize, crop)
        kept.append(sample)
    if out is None:
        return None, kept, errors
    cropped = out[: len(kept)]
    array = cropped if stored else finish(cropped, spec)
    if array.shape[1:] != tuple(spec.shape):
        raise ValueError(shape_mismatch(0, array.shape[1:], tuple(spec.shape)))
    return array, kept, errors


def _step_by_step(
    samples: Sequence[Sample], spec: Input, decode: DecodeStep, budget: Budget
) -> tuple[np.ndarray | None, list[Sample], list[SampleError]]:
    """Each manifest step in turn over the whole batch (Input.fidelity picks the ops)."""
    resize = _resize_after_decode(spec)
    fast = spec.fidelity == "fast"
    ops = FAST_BATCH_OPS if fast else BATCH_OPS
    images: list[np.ndarray] = []
    kept: list[Sample] = []
    errors: list[SampleError] = []
    for sample in samples:
        try:
            images.append(
                _read_and_decode(sample, decode, budget, resize=resize, fast=fast, resize_now=True)
            )
            kept.append(sample)
        except DecodeError as exc:
            errors.append(SampleError(sample.id, exc.reason))
    if not images:
        return None, kept, errors
    batch: list[np.ndarray] | np.ndarray = images
    steps = list(spec.steps)
    fused: set[int] = set()  # steps already applied by the one before them
    for index, step in enumerate(steps):
        # The resize straight after decode was applied to each image as it was decoded.
        if step.op == "decode" or step is resize or index in fused:
            continue
        after = steps[index + 1] if index + 1 < len(steps) else None
        nchw_next = isinstance(after, LayoutStep) and after.order == "NCHW"
        if isinstance(step, NormalizeStep) and nchw_next:
            batch = normalize_to_nchw(batch, step)
            fused.add(index + 1)
            continue
        batch = ops[step.op](batch, step)
    array = np.asarray(batch).astype(spec.element_type, copy=False)
    expected = tuple(spec.shape)
    if array.shape[1:] != expected:
        raise ValueError(shape_mismatch(0, array.shape[1:], expected))
    return array, kept, errors


def planar_steps(spec: Input) -> tuple[ResizeStep, CenterCropStep, NormalizeStep] | None:
    """The resize, crop and normalize steps when the steps are exactly decode, bilinear
    resize, center crop, normalize and an NCHW layout: what the fast mode runs as two
    fused passes. None otherwise."""
    steps = list(spec.steps)
    if [step.op for step in steps] != ["decode", "resize", "center_crop", "normalize", "layout"]:
        return None
    _, resize, crop, normalize, layout = steps
    if not (
        isinstance(resize, ResizeStep)
        and resize.method == "bilinear"
        and isinstance(crop, CenterCropStep)
        and isinstance(normalize, NormalizeStep)
        and isinstance(layout, LayoutStep)
        and layout.order == "NCHW"
    ):
        return None
    return resize, crop, normalize


def _fits_fused_path(image: np.ndarray, first: np.ndarray) -> bool:
    """8-bit pixels with the batch's first image's channels: what the fused path takes
    (what decode gives)."""
    return image.dtype == np.uint8 and image.shape[2] == first.shape[2]


def usual_dtype(spec: Input, stored: bool) -> np.dtype[Any]:
    """The dtype a chunk's tensors come in, but for a chunk the fused path cannot take:
    8-bit crops in the stored form of the fused fast path, else the spec's type."""
    fused = spec.fidelity == "fast" and planar_steps(spec) is not None and torch_importable()
    return np.dtype(np.uint8 if fused and stored else spec.element_type)
