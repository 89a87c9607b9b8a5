"""Preparing a folder of image bombs in this process (the embedded `bench`): the error
names each image and why, and nothing is cached."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from services.core.catalogue import resolve_model
from services.preprocess.datasets import resolve_dataset
from services.preprocess.local_shard import load_or_preprocess
from services.preprocess.pipeline import NoSamplePrepared
from shared.settings import get_settings
from shared.storage import LocalStore


@pytest.fixture(autouse=True)
def fresh_settings(data_dir: Path) -> Iterator[None]:
    yield
    get_settings.cache_clear()


def test_the_error_names_the_image(tmp_path: Path) -> None:
    folder = tmp_path / "bombs" / "cat"
    folder.mkdir(parents=True)
    Image.fromarray(np.zeros((60_000, 1, 3), np.uint8)).save(folder / "tall.png")
    Image.fromarray(np.zeros((1, 60_000, 3), np.uint8)).save(folder / "wide.png")
    dataset = resolve_dataset(str(tmp_path / "bombs"), count=None, seed=0, cache_dir=tmp_path)
    store = LocalStore(tmp_path / "objects")
    with pytest.raises(NoSamplePrepared) as info:
        load_or_preprocess(store, dataset, resolve_model("resnet18"))
    assert str(info.value) == (
        "dataset: none of the 2 samples could be prepared: "
        "cat/tall.png: image of 1x60000 pixels is 60000 times as long as it is wide; "
        "accepted: at most 100 times (BENCHSTACK_MAX_ASPECT_RATIO); "
        "cat/wide.png: image of 60000x1 pixels is 60000 times as long as it is wide; "
        "accepted: at most 100 times (BENCHSTACK_MAX_ASPECT_RATIO)"
    )
