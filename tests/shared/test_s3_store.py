"""S3Store against moto's S3 server on loopback (the minio client speaks plain S3)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.settings import Settings
from shared.storage import ObjectNotFound, make_store
from tests.support.s3 import moto_s3


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_s3() as address:
        yield address


def _settings(endpoint: str, bucket: str) -> Settings:
    return Settings(s3_endpoint=endpoint, s3_access_key="a", s3_secret_key="b", s3_bucket=bucket)


def test_round_trip_exists_list_describe(endpoint: str) -> None:
    store = make_store(_settings(endpoint, "round-trip"))  # creates the bucket
    store.put_bytes("runs/1/summary.txt", b"hello")
    store.put_bytes("runs/1/detail.txt", b"world")
    store.put_bytes("runs/2/summary.txt", b"other")
    assert store.get_bytes("runs/1/summary.txt") == b"hello"
    assert store.exists("runs/1/detail.txt") and not store.exists("runs/3/x")
    assert store.list_keys("runs/1/") == ["runs/1/detail.txt", "runs/1/summary.txt"]
    assert store.describe("runs/1/summary.txt") == "s3://round-trip/runs/1/summary.txt"
    with pytest.raises(ObjectNotFound):
        store.get_bytes("runs/9/none")


def test_bucket_already_there_is_fine(endpoint: str) -> None:
    make_store(_settings(endpoint, "twice"))
    make_store(_settings(endpoint, "twice")).put_bytes("a", b"1")


def test_url_endpoint_and_bad_keys(endpoint: str) -> None:
    store = make_store(_settings(f"http://{endpoint}", "url-form"))
    store.put_bytes("k", b"v")
    with pytest.raises(ValueError, match="relative path"):
        store.put_bytes("../escape", b"x")
