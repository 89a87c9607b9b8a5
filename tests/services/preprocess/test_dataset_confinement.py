"""A dataset's files are read only inside the datasets folder, by their resolved paths:
with real links in temporary folders, at listing and again at every read."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.preprocess_throughput import photo_like_jpeg
from services.core.catalogue import resolve_model
from services.preprocess.batch import read_sample
from services.preprocess.datasets import DatasetError, resolve_dataset
from services.preprocess.decode import DecodeError
from services.preprocess.pipeline import preprocess
from services.preprocess.sample_files import OUTSIDE
from services.preprocess.shard_keys import files_digest
from shared.settings import get_settings


@pytest.fixture(autouse=True)
def fresh_settings(data_dir: Path) -> Iterator[None]:
    yield
    get_settings.cache_clear()


@pytest.fixture
def datasets(data_dir: Path) -> Path:
    """The datasets folder, with one real dataset in it."""
    folder = data_dir / "datasets"
    (folder / "real").mkdir(parents=True)
    (folder / "real" / "a.jpg").write_bytes(photo_like_jpeg(64, 48, seed=1))
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder of images outside the datasets folder: what no submission may read."""
    folder = tmp_path / "host-files"
    folder.mkdir()
    (folder / "secret.jpg").write_bytes(photo_like_jpeg(64, 48, seed=2))
    return folder


def _resolve(folder: Path, cache: Path) -> list[str]:
    return [s.id for s in resolve_dataset(str(folder), count=None, seed=0, cache_dir=cache).samples]


def test_a_linked_folder_leading_out_is_refused_and_none_is_walked(
    datasets: Path, outside: Path, data_dir: Path
) -> None:
    (datasets / "link_pix").symlink_to(outside)
    (datasets / "link_root").symlink_to("/")
    for name in ("link_pix", "link_root"):
        with pytest.raises(DatasetError, match="leads outside the datasets folder"):
            resolve_dataset(str(datasets / name), count=None, seed=0, cache_dir=data_dir)
    # Inside a dataset, no link to a folder is followed, out or in.
    (datasets / "real" / "more").symlink_to(outside)
    (datasets / "real" / "loop").symlink_to(datasets)
    assert _resolve(datasets / "real", data_dir) == ["a.jpg"]


def test_a_linked_file_leading_out_is_refused_by_name_unread(
    datasets: Path, outside: Path, data_dir: Path
) -> None:
    (datasets / "real" / "b.jpg").symlink_to(outside / "secret.jpg")
    # A link to another dataset's file, inside the datasets folder, is read (a subset of
    # links is a common layout).
    (datasets / "other").mkdir()
    (datasets / "other" / "d.jpg").write_bytes(photo_like_jpeg(64, 48, seed=6))
    (datasets / "real" / "c.jpg").symlink_to(datasets / "other" / "d.jpg")
    dataset = resolve_dataset(str(datasets / "real"), count=None, seed=0, cache_dir=data_dir)
    prepared = preprocess(dataset.samples, resolve_model("resnet18").inputs[0])
    assert prepared.ids == ["a.jpg", "c.jpg"]
    assert [str(e) for e in prepared.errors] == [f"b.jpg: {OUTSIDE}"]
    assert str(outside) not in OUTSIDE
    # The shard key does not hash its bytes: the secret's contents do not change it.
    before = files_digest(dataset.samples)
    (outside / "secret.jpg").write_bytes(photo_like_jpeg(64, 48, seed=3))
    assert files_digest(dataset.samples) == before
    refusal = hashlib.sha256(b"refused\0" + OUTSIDE.encode()).digest()
    a, d = (
        hashlib.sha256(p.read_bytes()).digest()
        for p in (datasets / "real" / "a.jpg", datasets / "other" / "d.jpg")
    )
    assert before == hashlib.sha256(a + refusal + d).hexdigest()


def test_a_file_swapped_for_a_link_after_the_listing_is_refused_at_the_read(
    datasets: Path, outside: Path, data_dir: Path
) -> None:
    (datasets / "real" / "b.jpg").write_bytes(photo_like_jpeg(64, 48, seed=4))
    dataset = resolve_dataset(str(datasets / "real"), count=None, seed=0, cache_dir=data_dir)
    (datasets / "real" / "b.jpg").unlink()
    (datasets / "real" / "b.jpg").symlink_to(outside / "secret.jpg")
    with pytest.raises(DecodeError) as refused:
        read_sample(dataset.samples[1])
    assert (refused.value.name, refused.value.reason) == ("b.jpg", OUTSIDE)


def test_a_folder_named_outside_the_datasets_folder_confines_files_to_itself(
    outside: Path, tmp_path: Path, data_dir: Path
) -> None:
    # The CLI's case: the host's user names any folder; a link out of it is still refused.
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "x.jpg").symlink_to(outside / "secret.jpg")
    (mine / "y.jpg").write_bytes(photo_like_jpeg(64, 48, seed=5))
    dataset = resolve_dataset(str(mine), count=None, seed=0, cache_dir=data_dir)
    with pytest.raises(DecodeError, match="leads outside"):
        read_sample(dataset.samples[0])
    assert read_sample(dataset.samples[1]) == (mine / "y.jpg").read_bytes()
