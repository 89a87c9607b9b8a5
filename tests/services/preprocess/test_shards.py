"""ShardSet over many shards, in a local folder and on a real S3 server (moto): the
labels, errors and fetched samples come back in the samples' order across shards."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from services.core.manifest_sections import Input
from services.preprocess.datasets import SampleError
from services.preprocess.pipeline import Prepared
from services.preprocess.shards import ShardSet, write_shard
from shared.settings import Settings
from shared.storage import ObjectStore, make_store
from tests.support.s3 import moto_s3

SPEC = Input.model_validate(
    {"shape": (1, 2, 2), "steps": [{"decode": {}}, {"layout": {"order": "NCHW"}}]}
)
SHARDS, PER_SHARD = 20, 3


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    with moto_s3() as address:
        yield address


def _store(kind: str, tmp_path: Path, endpoint: str) -> ObjectStore:
    if kind == "local":
        return make_store(Settings(data_dir=tmp_path))
    return make_store(
        Settings(s3_endpoint=endpoint, s3_access_key="a", s3_secret_key="b", s3_bucket="shards")
    )


def _write_shards(store: ObjectStore) -> list[str]:
    keys = []
    for shard in range(SHARDS):
        first = shard * PER_SHARD
        # Sample n is filled with n, so a fetched row names its sample.
        tensors = np.arange(first, first + PER_SHARD, dtype=np.float32)[:, None, None, None]
        prepared = Prepared(
            tensors=np.broadcast_to(tensors, (PER_SHARD, 1, 2, 2)).copy(),
            ids=[f"s{n}" for n in range(first, first + PER_SHARD)],
            labels=[n % 5 for n in range(first, first + PER_SHARD)],
            errors=[SampleError(f"bad{shard}", "unreadable")],
        )
        key = f"shards/test-{shard:02d}.npy"
        write_shard(store, key, prepared)
        keys.append(key)
    return keys


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_many_shards_come_back_in_the_samples_order(
    kind: str, tmp_path: Path, s3_endpoint: str
) -> None:
    store = _store(kind, tmp_path, s3_endpoint)
    keys = _write_shards(store)
    opened = ShardSet.open(store, keys, SPEC)
    assert opened.counts == [PER_SHARD] * SHARDS
    assert opened.labels == [n % 5 for n in range(SHARDS * PER_SHARD)]
    assert opened.errors == [f"bad{shard}: unreadable" for shard in range(SHARDS)]
    wanted = [59, 0, 31, 30, 2, 45, 44, 17]
    assert opened.fetch(wanted)[:, 0, 0, 0].tolist() == wanted
