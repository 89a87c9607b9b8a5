"""Run a manifest input's preprocessing steps over samples, in batches."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from services.preprocess.datasets import DatasetError, Sample, SampleError
from services.preprocess.decode import DecodeError, decode_one
from services.preprocess.ops import (
    BATCH_OPS,
    FAST_BATCH_OPS,
    crop_size,
    normalize_planar,
    normalize_to_nchw,
    resize_crop_into,
)
from services.preprocess.pool import SharedRows, prepared_chunks
from shared.manifest_checks import shape_mismatch
from shared.manifest_sections import (
    CenterCropStep,
    DecodeStep,
    Input,
    LayoutStep,
    NormalizeStep,
    ResizeStep,
)
from shared.settings import get_settings

# "2": large JPEGs decoded at a reduced scale before their resize (draft mode).
PREPROCESS_VERSION = "2"  # bump when an op's output changes, so cached shards are not reused


@dataclass
class Prepared:
    tensors: np.ndarray
    ids: list[str]
    labels: list[int | None]
    errors: list[SampleError] = field(default_factory=list)
    processes: int = 1  # that prepared them (pool_size)


# An all-bad dataset's error lists this many files and reasons, then a count of the rest.
FAILURES_SHOWN = 5


class NoSamplePrepared(DatasetError):
    """Not one sample could be prepared; the message lists the first files and reasons."""


def describe_failures(errors: Sequence[SampleError], total: int) -> str:
    shown = "; ".join(str(e) for e in errors[:FAILURES_SHOWN])
    rest = len(errors) - FAILURES_SHOWN
    more = f"; and {rest} more" if rest > 0 else ""
    return f"dataset: none of the {total} samples could be prepared: {shown}{more}"


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
    steps = _planar_steps(spec)
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
    decode = _decode_step(spec)
    budget = max_image_pixels or get_settings().max_image_pixels
    planar_steps = _planar_steps(spec) if spec.fidelity == "fast" else None
    if planar_steps is not None and _torch_importable():
        streamed = _fused_fast_path(samples, spec, decode, planar_steps, budget, stored, rows)
        if streamed is not None:
            return streamed
    return _step_by_step(samples, spec, decode, budget)


def _torch_importable() -> bool:
    """Whether the fused path's resize (torch's 8-bit kernel) can run; without torch the
    fast mode goes step by step, resizing with Pillow."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _read_and_decode(
    sample: Sample,
    decode: DecodeStep,
    budget: int,
    *,
    resize: ResizeStep | None,
    fast: bool,
    resize_now: bool,
) -> np.ndarray:
    """One sample's pixels; DecodeError for a file that cannot be read or decoded."""
    try:
        data = sample.path.read_bytes()
    except OSError as exc:
        raise DecodeError(sample.id, f"cannot read file: {exc.strerror or exc}") from exc
    return decode_one(
        data,
        decode,
        name=sample.id,
        max_pixels=budget,
        resize=resize,
        fast=fast,
        resize_now=resize_now,
    )


def _fused_fast_path(
    samples: Sequence[Sample],
    spec: Input,
    decode: DecodeStep,
    steps: tuple[ResizeStep, CenterCropStep, NormalizeStep],
    budget: int,
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
    samples: Sequence[Sample], spec: Input, decode: DecodeStep, budget: int
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


def _planar_steps(spec: Input) -> tuple[ResizeStep, CenterCropStep, NormalizeStep] | None:
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


# A pool's start (forking processes that have imported numpy, Pillow and perhaps torch:
# ~25 ms here for two) pays only with at least this many chunks per process, and this many
# bytes of image files per process: about what one core decodes in that time (JPEG decode
# time follows the compressed bytes, which are mostly entropy-decoded). Measured here with
# 64 photo-size JPEGs (2.7 MB): two processes x0.84 of one; with 512, x1.5.
MIN_CHUNKS_PER_PROCESS = 2
MIN_BYTES_PER_PROCESS = 4 * 1024 * 1024


def preprocess(
    samples: Sequence[Sample],
    spec: Input,
    *,
    batch_size: int = 32,
    progress: Callable[[int], None] | None = None,
    max_image_pixels: int | None = None,
    processes: int = 1,
    stored: bool = False,
) -> Prepared:
    """Prepare every sample; per-file errors are kept, unless no sample could be prepared,
    which raises NoSamplePrepared naming the first files and why.

    ``max_image_pixels``: the per-image pixel budget; default the setting's.
    ``processes``: chunks of ``batch_size`` samples are prepared by that many processes
    (results in the samples' order, ``progress`` as each chunk ends). Every chunk writes
    its tensors into its rows of one buffer, shared with the pool's processes
    (services/preprocess/pool.py), which is the result when no sample failed: no copy
    through a pipe, no join at the end.
    ``stored``: the tensors in a shard's stored form (``preprocess_batch``); ``finish``
    turns them into the model's."""
    chunks = [samples[start : start + batch_size] for start in range(0, len(samples), batch_size)]
    budget = max_image_pixels or get_settings().max_image_pixels
    workers = pool_size(samples, processes, len(chunks))
    shared = SharedRows.allocate(len(samples), tuple(spec.shape), _usual_dtype(spec, stored))
    prepare = partial(preprocess_batch, spec=spec, max_image_pixels=budget, stored=stored)
    parts: list[np.ndarray] = []
    ids: list[str] = []
    labels: list[int | None] = []
    errors: list[SampleError] = []
    for chunk, (array, kept, chunk_errors) in zip(
        chunks, prepared_chunks(chunks, prepare, workers, shared), strict=True
    ):
        errors.extend(chunk_errors)
        if array is not None:
            parts.append(array)
            ids.extend(s.id for s in kept)
            labels.extend(s.label for s in kept)
        if progress is not None:
            progress(len(chunk))
    if samples and not ids:
        raise NoSamplePrepared(describe_failures(errors, len(samples)))
    if len({part.dtype for part in parts}) > 1:
        # A chunk that could not take the fused path came back finished; so must the rest.
        parts = [finish(part, spec) for part in parts]
    tensors = _joined(parts, spec, shared)
    return Prepared(tensors=tensors, ids=ids, labels=labels, errors=errors, processes=workers)


def pool_size(samples: Sequence[Sample], processes: int, chunks: int) -> int:
    """How many processes to prepare ``samples`` with, at most ``processes``: as many as
    the work pays a process for (MIN_CHUNKS_PER_PROCESS, MIN_BYTES_PER_PROCESS); one
    (no pool) when it pays for fewer than two."""
    workers = min(processes, chunks // MIN_CHUNKS_PER_PROCESS)
    if workers <= 1:
        return 1
    total = 0
    for sample in samples:
        with contextlib.suppress(OSError):  # an unreadable file is reported by its chunk
            total += sample.path.stat().st_size
        if total >= workers * MIN_BYTES_PER_PROCESS:
            return workers
    return max(1, total // MIN_BYTES_PER_PROCESS)


def _usual_dtype(spec: Input, stored: bool) -> np.dtype[Any]:
    """The dtype a chunk's tensors come in, but for a chunk the fused path cannot take:
    8-bit crops in the stored form of the fused fast path, else the spec's type."""
    fused = spec.fidelity == "fast" and _planar_steps(spec) is not None and _torch_importable()
    return np.dtype(np.uint8 if fused and stored else spec.element_type)


def _joined(parts: list[np.ndarray], spec: Input, shared: SharedRows) -> np.ndarray:
    """One array of every prepared sample. When every chunk wrote all its samples into
    the shared rows, those rows are the result as they are (no copy)."""
    if not parts:
        return np.empty((0, *spec.shape), dtype=spec.element_type)
    if sum(len(part) for part in parts) == shared.count:
        rows = shared.rows()
        if all(np.may_share_memory(part, rows) for part in parts):
            return rows
    return np.concatenate(parts)


def spec_digest(spec: Input) -> str:
    payload = json.dumps(
        {"v": PREPROCESS_VERSION, "input": spec.model_dump(mode="json")}, sort_keys=True
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def shard_key(sample_ids: Sequence[str], spec: Input, content_digest: str = "") -> str:
    """Content address of a shard: what went in (ids, optionally their bytes) and the steps."""
    digest = hashlib.sha256()
    digest.update(spec_digest(spec).encode())
    digest.update(content_digest.encode())
    for sample_id in sample_ids:
        digest.update(sample_id.encode() + b"\0")
    return f"shards/{digest.hexdigest()}.npy"


def files_digest(samples: Sequence[Sample]) -> str:
    """Digest of the samples' bytes, so a changed file never hits a stale shard."""
    digest = hashlib.sha256()
    for sample in samples:
        digest.update(hashlib.sha256(sample.path.read_bytes()).digest())
    return digest.hexdigest()


def encode_tensors(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def decode_tensors(data: bytes) -> np.ndarray:
    return np.load(io.BytesIO(data), allow_pickle=False)
