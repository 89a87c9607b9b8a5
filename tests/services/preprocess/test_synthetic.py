"""Synthetic datasets live in a cache of their own, content-addressed and evicted by size,
never in the shared datasets folder (where each seed was a permanent folder)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.preprocess.datasets import resolve_dataset
from services.preprocess.synthetic import IN_USE_SECONDS, SIZE_FILE, evict, make_synthetic
from shared.settings import get_settings


@pytest.fixture(autouse=True)
def fresh_settings(data_dir: Path) -> Iterator[None]:
    yield
    get_settings.cache_clear()


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*.jpg"))


def _age(folder: Path, seconds: float) -> None:
    """Mark ``folder`` last used ``seconds`` ago."""
    then = time.time() - seconds
    os.utime(folder, (then, then))


def test_synthetic_data_stays_out_of_the_datasets_folder(data_dir: Path) -> None:
    settings = get_settings()
    (settings.datasets_dir / "real" / "cats").mkdir(parents=True)
    (settings.datasets_dir / "real" / "cats" / "a.jpg").write_bytes(b"listed, not decoded")
    for seed in range(3):
        dataset = resolve_dataset("synthetic", count=2, seed=seed, cache_dir=data_dir)
        assert dataset.root.parent == (data_dir / "synthetic").resolve()
        assert dataset.name == f"synthetic(seed={seed},n=2)"
    # Nothing was written into the shared folder, so nothing can crowd out its listing.
    assert [p.name for p in settings.datasets_dir.iterdir()] == ["real"]


def test_a_folder_is_named_by_seed_count_and_generator_and_records_its_bytes(
    tmp_path: Path,
) -> None:
    one = make_synthetic(tmp_path, 3, seed=1)
    assert make_synthetic(tmp_path, 3, seed=1) == one  # reused
    others = {make_synthetic(tmp_path, 3, seed=2), make_synthetic(tmp_path, 4, seed=1)}
    assert one not in others and len(others) == 2
    assert int((one / SIZE_FILE).read_text()) == _bytes(one)


def test_the_least_recently_used_are_evicted_past_the_bound(tmp_path: Path) -> None:
    folders = [make_synthetic(tmp_path, 2, seed=seed) for seed in range(4)]
    sizes = [_bytes(f) for f in folders]
    for age, folder in zip((4000, 1000, 3000, 2000), folders, strict=True):
        _age(folder, age)
    # Using seed 0 again makes it the most recently used.
    assert make_synthetic(tmp_path, 2, seed=0) == folders[0]
    # Room for two of the four: seed 2 (oldest use now) goes first, then seed 3.
    bound = sizes[0] + sizes[1] + 1
    removed = evict(tmp_path, bound)
    assert removed == [folders[2].name, folders[3].name]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([folders[0].name, folders[1].name])
    # An evicted one asked for again is made again: the same pixels.
    again = make_synthetic(tmp_path, 2, seed=2)
    assert again == folders[2] and _bytes(again) == sizes[2]


def test_a_folder_used_lately_or_just_made_is_never_evicted(tmp_path: Path) -> None:
    old = make_synthetic(tmp_path, 2, seed=1)
    recent = make_synthetic(tmp_path, 2, seed=2)
    _age(old, IN_USE_SECONDS + 60)
    _age(recent, IN_USE_SECONDS / 2)
    made = make_synthetic(tmp_path, 2, seed=3, max_bytes=1)  # over the bound by itself
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([recent.name, made.name])


def test_resolve_dataset_keeps_the_cache_within_the_setting(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHSTACK_SYNTHETIC_CACHE_MB", "0")
    get_settings.cache_clear()
    first = resolve_dataset("synthetic", count=2, seed=1, cache_dir=data_dir).root
    _age(first, IN_USE_SECONDS + 60)
    second = resolve_dataset("synthetic", count=2, seed=2, cache_dir=data_dir).root
    assert [p.name for p in (data_dir / "synthetic").iterdir()] == [second.name]
