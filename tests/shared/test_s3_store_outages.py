"""S3Store when S3 is not well, against real servers on loopback (no mocks): moto's S3
stopped, started again, emptied of its bucket; and a server that accepts and never answers.

Every failure must be ObjectStoreUnavailable ("object store unavailable: <cause>", a
ConnectionError, so tasks retry it) within the bounds the settings give, and a missing
bucket must be made again by the next request instead of failing it.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Iterator

import pytest

from shared.s3_client import S3Bounds
from shared.s3_store import S3Store
from shared.settings import Settings
from shared.storage import ObjectNotFound, ObjectStoreUnavailable
from shared.task_guard import TRANSIENT_ERRORS
from tests.support.s3 import MotoS3, moto_s3_server, silent_server

# Small bounds so the tests are quick; generous read timeout: moto's first answer is slow.
BOUNDS = {
    "s3_connect_timeout_seconds": 1.0,
    "s3_read_timeout_seconds": 5.0,
    "s3_retries": 2,
    "s3_backoff_seconds": 0.1,
    "s3_probe_timeout_seconds": 0.5,
}


def _settings(endpoint: str, bucket: str, **overrides: float) -> Settings:
    values = {**BOUNDS, **overrides}
    return Settings(
        s3_endpoint=endpoint, s3_access_key="a", s3_secret_key="b", s3_bucket=bucket, **values
    )


@pytest.fixture
def moto() -> Iterator[MotoS3]:
    with moto_s3_server() as server:
        yield server


def _drop_bucket(store: S3Store) -> None:
    """S3 back but empty: the bucket gone with everything in it."""
    for key in store.list_keys(""):
        store.client.remove_object(store.bucket, key)
    store.client.remove_bucket(store.bucket)
    assert not store.client.bucket_exists(store.bucket)


def test_a_stopped_server_is_unavailable_within_the_bounds_then_back(moto: MotoS3) -> None:
    settings = _settings(moto.endpoint, "stopped")
    store = S3Store.from_settings(settings)
    store.put_bytes("runs/1/a", b"before")
    moto.stop()
    bound = S3Bounds.from_settings(settings).worst_case_seconds()
    for attempt in (
        lambda: store.put_bytes("runs/1/b", b"during"),
        lambda: store.get_bytes("runs/1/a"),
        lambda: store.exists("runs/1/a"),
        lambda: store.list_keys("runs/"),
    ):
        started = time.monotonic()
        with pytest.raises(ObjectStoreUnavailable) as raised:
            attempt()
        assert time.monotonic() - started < bound + 1.0
        assert str(raised.value) == (
            f"object store unavailable: cannot connect to {moto.endpoint}: connection refused"
        )
        assert isinstance(raised.value, TRANSIENT_ERRORS)
    moto.start()
    store.put_bytes("runs/1/b", b"after")
    assert store.list_keys("runs/1/") == ["runs/1/a", "runs/1/b"]


def test_the_error_survives_pickling_as_celery_retries_do() -> None:
    error = pickle.loads(pickle.dumps(ObjectStoreUnavailable("cannot connect to s3:9000")))
    assert isinstance(error, ObjectStoreUnavailable)
    assert str(error) == "object store unavailable: cannot connect to s3:9000"


def test_a_missing_bucket_is_made_again_by_the_next_request(moto: MotoS3) -> None:
    store = S3Store.from_settings(_settings(moto.endpoint, "emptied"))
    store.put_bytes("runs/1/a", b"1")
    _drop_bucket(store)
    store.put_bytes("runs/1/b", b"2")  # NoSuchBucket: the bucket is made and the put retried
    assert store.get_bytes("runs/1/b") == b"2"
    _drop_bucket(store)
    with pytest.raises(ObjectNotFound):
        store.get_bytes("runs/1/b")  # the bucket is made again; the object is just not there
    _drop_bucket(store)
    assert store.list_keys("runs/") == []
    assert store.client.bucket_exists(store.bucket)


def test_the_check_reports_a_missing_bucket_and_makes_it(moto: MotoS3) -> None:
    store = S3Store.from_settings(_settings(moto.endpoint, "checked"))
    with pytest.raises(ObjectStoreUnavailable, match="bucket 'checked' was missing; created it"):
        store.check()
    store.check()  # made by the failed check: the next one passes
    moto.stop()
    started = time.monotonic()
    with pytest.raises(ObjectStoreUnavailable, match="connection refused"):
        store.check()
    assert time.monotonic() - started < 1.0  # one try, no retries


def test_a_hung_server_ends_every_call_within_the_bounds() -> None:
    with silent_server() as endpoint:
        settings = _settings(endpoint, "hung", s3_read_timeout_seconds=0.5, s3_retries=3)
        store = S3Store.from_settings(settings)
        bounds = S3Bounds.from_settings(settings)
        for attempt in (lambda: store.get_bytes("k"), lambda: store.put_bytes("k", b"v")):
            started = time.monotonic()
            with pytest.raises(ObjectStoreUnavailable, match="did not answer in time"):
                attempt()
            took = time.monotonic() - started
            # A read that timed out is tried once more, not retries+1 times.
            assert 2 * 0.5 <= took < bounds.worst_case_seconds() + 1.0
        started = time.monotonic()
        with pytest.raises(ObjectStoreUnavailable, match="did not answer in time"):
            store.check()
        assert time.monotonic() - started < 0.5 + 0.5
