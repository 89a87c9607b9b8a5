"""Synthetic training batches: made once where the model trains, distinct, drawn in turn."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from services.workloads.training.data_sources import SYNTHETIC_POOL, synthetic, synthetic_arrays


def test_synthetic_batches_are_made_once_and_cycle_through_distinct_ones() -> None:
    next_batch = synthetic(4, 3, 8, 10, seed=1)
    drawn = [next_batch() for _ in range(SYNTHETIC_POOL + 1)]
    images = [batch[0] for batch in drawn]
    assert images[0].shape == (4, 3, 8, 8) and drawn[0][1].shape == (4,)
    # Consecutive steps see different inputs; after the pool the first batch comes back.
    assert not torch.equal(images[0], images[1])
    assert images[SYNTHETIC_POOL] is images[0]
    assert int(drawn[0][1].max()) < 10


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_synthetic_batches_sit_on_the_device_asked_for(device: str) -> None:
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("torch sees no GPU here")
    images, labels = synthetic(2, 1, 8, 10, device=device)()
    assert images.device.type == labels.device.type == device


def test_the_same_seed_gives_the_same_batches() -> None:
    first, second = synthetic(2, 1, 8, 10, seed=3)(), synthetic(2, 1, 8, 10, seed=3)()
    assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1])


@pytest.mark.parametrize("layout", [(8, 8, 3), (3, 8, 8)])
def test_keras_arrays_cycle_likewise(layout: tuple[int, ...]) -> None:
    next_batch = synthetic_arrays(2, layout, 10, seed=0)
    drawn = [next_batch()[0] for _ in range(SYNTHETIC_POOL + 1)]
    assert drawn[0].shape == (2, *layout) and drawn[0].dtype == np.float32
    assert not np.array_equal(drawn[0], drawn[1])
    assert drawn[SYNTHETIC_POOL] is drawn[0]
