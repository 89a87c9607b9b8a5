"""Tensor shards in the object store: writing, completeness, loading for the QSL, and the
tensors' .npy encoding.

A shard is two objects: the tensors (``shards/<hash>.npy``) and, written last, a JSON
sidecar with sample ids, labels and per-sample errors. The sidecar's presence means the
shard is complete, so a reader never picks up half a shard after a crash. A reader that
finds either object gone raises ``ObjectLost``: the shard is to be prepared again.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from services.core.manifest_sections import Input
from services.preprocess.batch import finish
from services.preprocess.pipeline import Prepared
from shared.storage import ObjectLost, ObjectNotFound, ObjectStore


def meta_key(shard_key: str) -> str:
    return shard_key.removesuffix(".npy") + ".json"


def is_complete(store: ObjectStore, shard_key: str) -> bool:
    return store.exists(meta_key(shard_key))


def write_shard(store: ObjectStore, shard_key: str, prepared: Prepared) -> dict[str, Any]:
    meta = {
        "ids": prepared.ids,
        "labels": prepared.labels,
        "errors": [str(e) for e in prepared.errors],
        "shape": list(prepared.tensors.shape),
        "dtype": str(prepared.tensors.dtype),
    }
    store.put_bytes(shard_key, encode_tensors(prepared.tensors))
    store.put_bytes(meta_key(shard_key), json.dumps(meta).encode())
    return meta


def is_whole(store: ObjectStore, shard_key: str) -> bool:
    """Both objects are there: what a preprocess worker asks before it skips a shard, so a
    shard that lost its tensors but kept its sidecar is prepared again."""
    return is_complete(store, shard_key) and store.exists(shard_key)


def read_meta(store: ObjectStore, shard_key: str) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads(_get_prepared(store, meta_key(shard_key)))
    return meta


def _get_prepared(store: ObjectStore, key: str) -> bytes:
    """An object the preprocess workers stored: one that is gone is lost work to redo."""
    try:
        return store.get_bytes(key)
    except ObjectLost:
        raise
    except ObjectNotFound:
        raise ObjectLost(key) from None


@dataclass
class ShardSet:
    """An evaluation's shards seen as one indexed sample list, fetched on demand.

    ``fetch`` is handed to ``execute_run`` and called only from LoadGen's untimed load
    callback, so downloading and decoding shards never counts towards a latency, nor does
    finishing a shard kept in its stored 8-bit form (``batch.finish``).
    """

    store: ObjectStore
    spec: Input
    keys: list[str]
    counts: list[int]
    labels: list[int | None]
    errors: list[str]

    @classmethod
    def open(cls, store: ObjectStore, keys: Sequence[str], spec: Input) -> ShardSet:
        counts: list[int] = []
        labels: list[int | None] = []
        errors: list[str] = []
        for key in keys:
            meta = read_meta(store, key)
            counts.append(len(meta["ids"]))
            labels.extend(meta["labels"])
            errors.extend(meta["errors"])
            # The tensors too, before the run holds the host: fetched later, in LoadGen's
            # load callback, a missing one could not be told as lost work.
            if not store.exists(key):
                raise ObjectLost(key)
        return cls(
            store=store, spec=spec, keys=list(keys), counts=counts, labels=labels, errors=errors
        )

    @property
    def sample_count(self) -> int:
        return sum(self.counts)

    def fetch(self, indices: Sequence[int]) -> np.ndarray:
        wanted = np.asarray(indices, dtype=np.int64)
        bounds = np.cumsum([0, *self.counts])
        shard_of = np.searchsorted(bounds, wanted, side="right") - 1
        loaded: dict[int, np.ndarray] = {}
        for shard in np.unique(shard_of):
            loaded[int(shard)] = decode_tensors(_get_prepared(self.store, self.keys[int(shard)]))
        rows = [loaded[int(s)][int(i - bounds[s])] for s, i in zip(shard_of, wanted, strict=True)]
        return finish(np.stack(rows), self.spec)


# The tensors as .npy bytes; no pickles, so a shard read back can never run code.
def encode_tensors(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def decode_tensors(data: bytes) -> np.ndarray:
    return np.load(io.BytesIO(data), allow_pickle=False)
