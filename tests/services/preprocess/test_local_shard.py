"""Embedded and stack share one shard format under one content address: a shard the
stack's preprocess worker wrote is reused by an embedded run, and one an embedded run
wrote is complete to the stack (its JSON sidecar, written last)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from services.core.catalogue import resolve_model
from services.preprocess import shards
from services.preprocess.datasets import resolve_dataset
from services.preprocess.local_shard import load_or_preprocess
from services.preprocess.pipeline import Prepared
from shared.storage import LocalStore

TINY = Path("tests/fixtures/tiny_cnn.yaml")


def test_embedded_writes_the_stacks_shard_and_reads_it_back(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    dataset = resolve_dataset("synthetic", count=6, seed=3, cache_dir=tmp_path)
    manifest = resolve_model(str(TINY))

    prepared, reused, key = load_or_preprocess(store, dataset, manifest)
    assert not reused and shards.is_complete(store, key)
    assert shards.read_meta(store, key)["ids"] == [s.id for s in dataset.samples]

    again, reused, same_key = load_or_preprocess(store, dataset, manifest)
    assert reused and same_key == key
    np.testing.assert_array_equal(again.tensors, prepared.tensors)
    assert again.labels == prepared.labels and again.ids == prepared.ids


def test_a_shard_the_stack_wrote_is_reused_by_an_embedded_run(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    dataset = resolve_dataset("synthetic", count=4, seed=5, cache_dir=tmp_path)
    manifest = resolve_model(str(TINY))
    _, _, key = load_or_preprocess(LocalStore(tmp_path / "probe"), dataset, manifest)
    marked = np.full((4, 1, 32, 32), 7.0, np.float32)  # not what preprocessing would give
    ids = [s.id for s in dataset.samples]
    shards.write_shard(store, key, Prepared(tensors=marked, ids=ids, labels=[1, 2, 3, None]))

    prepared, reused, _ = load_or_preprocess(store, dataset, manifest)
    assert reused
    np.testing.assert_array_equal(prepared.tensors, marked)
    assert prepared.labels == [1, 2, 3, None]


def test_a_fast_mode_shard_is_stored_as_8_bit_crops_and_run_as_floats(tmp_path: Path) -> None:
    """The embedded run keeps the fast mode's stored form in its cache (a quarter of the
    bytes) and hands the run normalized floats, fresh or reused."""
    from services.preprocess.datasets import Dataset, Sample
    from services.preprocess.pipeline import preprocess

    store = LocalStore(tmp_path / "store")
    photos = Path(str(__import__("sklearn").__file__)).parent / "datasets" / "images"
    samples = [Sample(id=p.name, path=p, label=None) for p in sorted(photos.glob("*.jpg"))]
    dataset = Dataset(name="photos", root=photos, samples=samples, class_names=[])
    catalogue = resolve_model("resnet18")
    spec = catalogue.inputs[0].model_copy(update={"fidelity": "fast"})
    manifest = catalogue.model_copy(update={"inputs": [spec]})
    expected = preprocess(samples, spec).tensors

    fresh, reused, key = load_or_preprocess(store, dataset, manifest)
    assert not reused and shards.read_meta(store, key)["dtype"] == "uint8"
    again, reused, _ = load_or_preprocess(store, dataset, manifest)
    assert reused
    for prepared in (fresh, again):
        assert prepared.tensors.dtype == np.float32
        np.testing.assert_array_equal(prepared.tensors, expected)
