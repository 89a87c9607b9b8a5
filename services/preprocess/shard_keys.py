"""A shard's content address: what went in (sample ids, optionally the files' bytes) and
the preprocessing steps, with a version that changes whenever an op's output does."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from services.core.manifest_sections import Input
from services.preprocess.datasets import Sample
from services.preprocess.sample_files import file_digest
from shared.settings import get_settings

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


def files_digest(samples: Sequence[Sample], max_file_bytes: int | None = None) -> str:
    """Digest of the samples' bytes, so a changed file never hits a stale shard.

    Read by 1 MiB chunks, each file checked first (sample_files.file_digest): one over
    ``max_file_bytes`` (default: the ``max_sample_bytes`` setting the workers apply too)
    or linking out of its folder is not read, and the workers refuse it by name."""
    bound = max_file_bytes if max_file_bytes is not None else get_settings().max_sample_bytes
    digest = hashlib.sha256()
    for sample in samples:
        digest.update(file_digest(sample, bound))
    return digest.hexdigest()
