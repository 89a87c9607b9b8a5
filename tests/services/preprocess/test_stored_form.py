"""A fast-mode shard keeps 8-bit crops and is normalized where it is loaded: the same bits
as normalizing before storing, a quarter of the bytes, whichever path reads it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.preprocess_throughput import benchstack_spec
from services.preprocess import batch
from services.preprocess.batch import deferred_normalize, finish, preprocess_batch
from services.preprocess.datasets import Sample
from services.preprocess.pipeline import Prepared, preprocess
from services.preprocess.shards import ShardSet, encode_tensors, write_shard
from shared.storage import LocalStore

PHOTOS = Path(__import__("sklearn").__file__).parent / "datasets" / "images"  # real JPEGs


def photo_samples() -> list[Sample]:
    return [Sample(id=p.name, path=p, label=None) for p in sorted(PHOTOS.glob("*.jpg"))]


def test_a_stored_fast_shard_finishes_to_the_bits_of_normalizing_first() -> None:
    spec = benchstack_spec("fast")
    normalized, _, _ = preprocess_batch(photo_samples(), spec)
    stored, _, _ = preprocess_batch(photo_samples(), spec, stored=True)
    assert normalized is not None and stored is not None
    assert stored.dtype == np.uint8 and stored.shape == normalized.shape
    assert np.array_equal(finish(stored, spec), normalized)
    assert len(encode_tensors(stored)) * 3.9 < len(encode_tensors(normalized))


def test_the_reference_mode_and_finished_tensors_are_stored_as_they_are() -> None:
    reference = benchstack_spec("reference")
    assert deferred_normalize(reference) is None
    stored, _, _ = preprocess_batch(photo_samples(), reference, stored=True)
    assert stored is not None and stored.dtype == np.float32
    assert finish(stored, reference) is stored
    fast = benchstack_spec("fast")
    already = np.zeros((1, 3, 224, 224), np.float32)  # a shard written before this form
    assert finish(already, fast) is already


def test_the_stacks_shard_reader_hands_the_qsl_finished_tensors(tmp_path: Path) -> None:
    spec = benchstack_spec("fast")
    samples = photo_samples()
    prepared = preprocess(samples, spec, stored=True)
    assert prepared.tensors.dtype == np.uint8
    store = LocalStore(tmp_path)
    key = "shards/photos.npy"
    write_shard(store, key, prepared)
    fetched = ShardSet.open(store, [key], spec).fetch([1, 0])
    expected = preprocess(samples, spec).tensors
    assert fetched.dtype == np.float32
    assert np.array_equal(fetched, expected[[1, 0]])


def test_chunks_that_came_back_in_different_forms_are_all_finished(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A chunk that cannot take the fused path returns finished floats; concatenating it with
    8-bit chunks must not cast raw pixels to floats as if they were normalized."""
    spec = benchstack_spec("fast")
    samples = photo_samples()
    plain = preprocess(samples, spec, batch_size=1)
    calls = iter([True, False])  # the first chunk fuses, the second does not
    monkeypatch.setattr(batch, "_fits_fused_path", lambda image, first: next(calls))
    mixed = preprocess(samples, spec, batch_size=1, stored=True)
    assert mixed.tensors.dtype == plain.tensors.dtype == np.float32
    assert np.array_equal(mixed.tensors, plain.tensors)


def test_a_prepared_shard_keeps_its_ids_with_the_stored_form(tmp_path: Path) -> None:
    spec = benchstack_spec("fast")
    prepared = preprocess(photo_samples(), spec, stored=True)
    assert isinstance(prepared, Prepared)
    assert prepared.ids == [s.id for s in photo_samples()]
