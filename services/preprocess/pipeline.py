"""Run a manifest input's preprocessing steps over a dataset's samples, in batches (each
batch by services/preprocess/batch.py), here or in a forked pool, into one array."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from services.core.manifest_sections import Input
from services.preprocess.batch import finish, preprocess_batch, usual_dtype
from services.preprocess.datasets import DatasetError, OutOfMemory, Sample, SampleError
from services.preprocess.device_decode import decode_device, decoder_label, prepare_on_device
from services.preprocess.pool import ChunkResult, SharedRows, prepared_chunks
from shared.memory_limit import error_text
from shared.settings import get_settings


@dataclass
class Prepared:
    tensors: np.ndarray
    ids: list[str]
    labels: list[int | None]
    errors: list[SampleError] = field(default_factory=list)
    processes: int = 1  # that prepared them (pool_size)
    decoder: str = "cpu"  # what decoded the JPEGs: "cpu", or "nvjpeg (cuda:0)"


# An all-bad dataset's error lists this many files and reasons, then a count of the rest.
FAILURES_SHOWN = 5


class NoSamplePrepared(DatasetError):
    """Not one sample could be prepared; the message lists the first files and reasons."""


def describe_failures(errors: Sequence[SampleError], total: int) -> str:
    shown = "; ".join(str(e) for e in errors[:FAILURES_SHOWN])
    rest = len(errors) - FAILURES_SHOWN
    more = f"; and {rest} more" if rest > 0 else ""
    return f"dataset: none of the {total} samples could be prepared: {shown}{more}"


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
    device: str = "cpu",
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
    turns them into the model's.
    ``device``: the run's; a CUDA one decodes the fast mode's JPEGs on it by nvJPEG
    (services/preprocess/device_decode.py), in this process (a forked child cannot
    use CUDA)."""
    chunks = [samples[start : start + batch_size] for start in range(0, len(samples), batch_size)]
    settings = get_settings()
    budget = max_image_pixels or settings.max_image_pixels
    decoding_device = decode_device(spec, device)
    workers = 1 if decoding_device else pool_size(samples, processes, len(chunks))
    shared = SharedRows.allocate(len(samples), tuple(spec.shape), usual_dtype(spec, stored))
    prepare = (
        partial(
            prepare_on_device,
            spec=spec,
            device=decoding_device,
            max_image_pixels=budget,
            stored=stored,
        )
        if decoding_device
        else partial(preprocess_batch, spec=spec, max_image_pixels=budget, stored=stored)
    )
    parts: list[np.ndarray] = []
    ids: list[str] = []
    labels: list[int | None] = []
    errors: list[SampleError] = []
    results = prepared_chunks(
        chunks, prepare, workers, shared, settings.max_preprocess_memory_mb * 2**20
    )
    for chunk, (array, kept, chunk_errors) in zip(chunks, _named_oom(results), strict=True):
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
    return Prepared(
        tensors=tensors,
        ids=ids,
        labels=labels,
        errors=errors,
        processes=workers,
        decoder=decoder_label(decoding_device),
    )


def _named_oom(results: Iterator[ChunkResult]) -> Iterator[ChunkResult]:
    """The chunks' results; a MemoryError preparing them as OutOfMemory, whose text says
    which limit it met (never the empty text of Pillow's bare MemoryError)."""
    try:
        yield from results
    except MemoryError as exc:
        raise OutOfMemory(error_text(exc, "preparing samples")) from None


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
