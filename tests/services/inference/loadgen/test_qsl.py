"""TensorQSL: what LoadGen's load callback stages, and what a batch gathers from it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from services.inference.loadgen.qsl import TensorQSL


def _samples(count: int) -> np.ndarray:
    # Sample i is filled with i, so a gathered row names the sample it came from.
    return np.arange(count, dtype=np.float32)[:, None, None].repeat(4, axis=1).repeat(3, axis=2)


def test_samples_in_ram_are_served_where_they_are() -> None:
    tensors = _samples(6)
    qsl = TensorQSL.from_array(tensors)
    qsl.load([5, 0, 3, 1, 4, 2])  # LoadGen's order need not be the samples'
    batch = qsl.gather([3, 3, 0, 5])
    assert batch[:, 0, 0].tolist() == [3, 3, 0, 5]
    # The loaded set is the caller's array, not a copy of it; a batch is a copy.
    assert np.shares_memory(qsl._staged, tensors)
    assert not np.shares_memory(batch, tensors)


def _recording_fetch(
    tensors: np.ndarray,
) -> tuple[Callable[[Sequence[int]], np.ndarray], list[list[int]]]:
    """A fetch from ``tensors`` and the list of the index lists it was asked for."""
    asked: list[list[int]] = []

    def fetch(indices: Sequence[int]) -> np.ndarray:
        asked.append(list(indices))
        return tensors[np.asarray(indices)]

    return fetch, asked


def test_fetched_samples_are_staged_in_the_order_loaded() -> None:
    fetch, asked = _recording_fetch(_samples(6))
    qsl = TensorQSL(6, 3, fetch)
    qsl.load([4, 1, 2])
    assert asked == [[4, 1, 2]]
    assert qsl.gather([2, 4])[:, 0, 0].tolist() == [2, 4]


@pytest.mark.parametrize("resident", [True, False], ids=["in RAM", "fetched"])
def test_a_sample_not_loaded_is_an_error_not_another_samples_row(resident: bool) -> None:
    tensors = _samples(6)
    qsl = (
        TensorQSL.from_array(tensors, performance_count=3)
        if resident
        else TensorQSL(6, 3, lambda idx: tensors[np.asarray(idx)])
    )
    qsl.load([0, 1, 2])
    with pytest.raises(RuntimeError, match=r"samples \[5\] requested but not loaded"):
        qsl.gather([1, 5])
    qsl.unload([0, 1, 2])
    with pytest.raises(RuntimeError, match="before LoadGen loaded them"):
        qsl.gather([1])


def test_the_same_set_loaded_again_is_fetched_once_another_set_afresh() -> None:
    fetch, asked = _recording_fetch(_samples(6))
    qsl = TensorQSL(6, 6, fetch)
    qsl.load([0, 1, 2, 3])  # a run's calibration test
    qsl.unload([0, 1, 2, 3])
    qsl.load([3, 1, 0, 2])  # the run itself: the same set, in LoadGen's order
    assert asked == [[0, 1, 2, 3]]
    assert qsl.gather([2, 3, 0])[:, 0, 0].tolist() == [2, 3, 0]
    with pytest.raises(RuntimeError, match=r"samples \[4\]"):
        qsl.gather([4])
    qsl.unload([3, 1, 0, 2])
    qsl.load([4, 5])
    assert asked == [[0, 1, 2, 3], [4, 5]]
    assert qsl.gather([5, 4])[:, 0, 0].tolist() == [5, 4]
    with pytest.raises(RuntimeError, match=r"samples \[0\]"):
        qsl.gather([0])
