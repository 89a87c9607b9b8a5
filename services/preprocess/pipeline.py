"""Run a manifest input's preprocessing steps over samples, in batches."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from services.preprocess.datasets import Sample
from services.preprocess.ops import BATCH_OPS, DecodeError, decode_one
from shared.manifest import DecodeStep, Input

PREPROCESS_VERSION = "1"  # bump when an op's output changes, so cached shards are not reused


@dataclass(frozen=True)
class SampleError:
    sample_id: str
    message: str

    def __str__(self) -> str:
        return f"{self.sample_id}: {self.message}"


@dataclass
class Prepared:
    tensors: np.ndarray
    ids: list[str]
    labels: list[int | None]
    errors: list[SampleError] = field(default_factory=list)


def _decode_step(spec: Input) -> DecodeStep:
    first = spec.steps[0] if spec.steps else None
    return first if isinstance(first, DecodeStep) else DecodeStep(op="decode")


def preprocess_batch(
    samples: Sequence[Sample], spec: Input
) -> tuple[np.ndarray | None, list[Sample], list[SampleError]]:
    """Decode each sample (errors per file), then apply the batch ops in manifest order."""
    decode = _decode_step(spec)
    images: list[np.ndarray] = []
    kept: list[Sample] = []
    errors: list[SampleError] = []
    for sample in samples:
        try:
            images.append(decode_one(sample.path.read_bytes(), decode))
            kept.append(sample)
        except (DecodeError, OSError) as exc:
            errors.append(SampleError(sample.id, str(exc)))
    if not images:
        return None, kept, errors
    batch: list[np.ndarray] | np.ndarray = images
    for step in spec.steps:
        if step.op == "decode":
            continue
        batch = BATCH_OPS[step.op](batch, step)
    array = np.asarray(batch).astype(spec.element_type, copy=False)
    expected = tuple(spec.shape)
    if array.shape[1:] != expected:
        raise ValueError(
            f"inputs[0].shape: steps produce {array.shape[1:]}, manifest says {expected}"
        )
    return array, kept, errors


def preprocess(
    samples: Sequence[Sample],
    spec: Input,
    *,
    batch_size: int = 32,
    progress: Callable[[int], None] | None = None,
) -> Prepared:
    parts: list[np.ndarray] = []
    ids: list[str] = []
    labels: list[int | None] = []
    errors: list[SampleError] = []
    for start in range(0, len(samples), batch_size):
        chunk = samples[start : start + batch_size]
        array, kept, chunk_errors = preprocess_batch(chunk, spec)
        errors.extend(chunk_errors)
        if array is not None:
            parts.append(array)
            ids.extend(s.id for s in kept)
            labels.extend(s.label for s in kept)
        if progress is not None:
            progress(len(chunk))
    tensors = (
        np.concatenate(parts) if parts else np.empty((0, *spec.shape), dtype=spec.element_type)
    )
    return Prepared(tensors=tensors, ids=ids, labels=labels, errors=errors)


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
