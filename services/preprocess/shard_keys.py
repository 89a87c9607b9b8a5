"""A shard's content address: what went in (sample ids, optionally the files' bytes) and
the preprocessing steps, with a version that changes whenever an op's output does."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from services.preprocess.datasets import Sample
from shared.manifest_sections import Input

# "2": large JPEGs decoded at a reduced scale before their resize (draft mode).
PREPROCESS_VERSION = "2"  # bump when an op's output changes, so cached shards are not reused


def spec_digest(spec: Input) -> str:
    payload = json.dumps(
        {"v": PREPROCESS_VERSION, "input": spec.model_dump(mode="json")}, sort_keys=True
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def shard_key(
    sample_ids: Sequence[str], spec: Input, content_digest: str = "", decoder: str = ""
) -> str:
    """Content address of a shard: what went in (ids, optionally their bytes), the steps,
    and the decoder when it is not the CPU's (a GPU's pixels are not the CPU's)."""
    digest = hashlib.sha256()
    digest.update(spec_digest(spec).encode())
    digest.update(content_digest.encode())
    if decoder:
        digest.update(b"decoder\0" + decoder.encode() + b"\0")
    for sample_id in sample_ids:
        digest.update(sample_id.encode() + b"\0")
    return f"shards/{digest.hexdigest()}.npy"


def files_digest(samples: Sequence[Sample]) -> str:
    """Digest of the samples' bytes, so a changed file never hits a stale shard."""
    digest = hashlib.sha256()
    for sample in samples:
        digest.update(hashlib.sha256(sample.path.read_bytes()).digest())
    return digest.hexdigest()
