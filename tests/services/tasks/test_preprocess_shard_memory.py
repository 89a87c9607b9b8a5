"""A shard of image bombs fails with a reason, quickly, in a child under a memory limit:
never a kernel OOM kill of the worker, which the broker would redeliver."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from services.core.catalogue import resolve_model
from services.core.messages import PreprocessShard
from services.preprocess.shards import is_complete
from services.tasks.preprocess import ShardFailed, prepare_shard
from shared.settings import get_settings
from shared.storage import make_store


@pytest.fixture(autouse=True)
def fresh_settings(data_dir: Path) -> Iterator[None]:
    yield
    get_settings.cache_clear()


def bomb_folder(root: Path) -> list[str]:
    folder = root / "bombs" / "class0"
    folder.mkdir(parents=True)
    names = []
    for width, height in [(1, 60_000), (60_000, 1)]:
        Image.fromarray(np.zeros((height, width, 3), np.uint8)).save(folder / f"{width}.png")
        names.append(f"class0/{width}.png")
    return names


def message(dataset: Path, ids: list[str]) -> PreprocessShard:
    spec = resolve_model("resnet18").inputs[0]
    return PreprocessShard(
        evaluation_id="e1",
        shard_index=0,
        shard_key="shards/bombs.npy",
        dataset=str(dataset),
        sample_ids=ids,
        input_spec=spec.model_dump(mode="json"),
        batch_size=8,
    )


def shard_of_bombs(tmp_path: Path) -> PreprocessShard:
    from services.preprocess.datasets import resolve_dataset

    bomb_folder(tmp_path)
    dataset = resolve_dataset(str(tmp_path / "bombs"), count=None, seed=0, cache_dir=tmp_path)
    return message(tmp_path / "bombs", [s.id for s in dataset.samples])


def test_a_shard_of_bombs_fails_naming_them(tmp_path: Path) -> None:
    shard = shard_of_bombs(tmp_path)
    settings = get_settings()
    with pytest.raises(ShardFailed) as info:
        prepare_shard(shard, settings, make_store(settings))
    text = str(info.value)
    assert text.startswith("preprocess: dataset: none of the 2 samples could be prepared: ")
    assert "1x60000 pixels" in text and "60000x1 pixels" in text
    assert "BENCHSTACK_MAX_ASPECT_RATIO" in text


def test_without_the_bounds_the_memory_limit_fails_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHSTACK_MAX_ASPECT_RATIO", "1000000")
    monkeypatch.setenv("BENCHSTACK_MAX_OUTPUT_PIXELS", str(10**12))
    monkeypatch.setenv("BENCHSTACK_MAX_PREPROCESS_MEMORY_MB", "512")
    get_settings.cache_clear()
    shard = shard_of_bombs(tmp_path)
    settings = get_settings()
    start = time.monotonic()
    with pytest.raises(ShardFailed) as info:
        prepare_shard(shard, settings, make_store(settings))
    assert "needed more than 0.5 GB of memory" in str(info.value), str(info.value)
    assert "BENCHSTACK_MAX_PREPROCESS_MEMORY_MB" in str(info.value)
    assert time.monotonic() - start < 60
    assert not is_complete(make_store(settings), shard.shard_key)
