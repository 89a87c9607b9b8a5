"""A brick's weight bytes, and the system's memory read cost the cold-weights
construction multiplies them by."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from services.workloads.bricks.memory import measure_memory_read, weight_bytes


def test_weight_bytes_count_parameters_and_buffers() -> None:
    assert weight_bytes(nn.Linear(4, 3)) == (4 * 3 + 3) * 4
    # Batch norm: weight and bias, running mean and variance (float32), and the count of
    # batches seen (one int64).
    assert weight_bytes(nn.BatchNorm2d(8)) == 4 * 8 * 4 + 8
    assert weight_bytes(nn.Linear(4, 3).to(torch.float16)) == (4 * 3 + 3) * 2
    assert weight_bytes(nn.ReLU()) == 0
    # Not a torch module (an ONNX brick's session): not counted, never guessed.
    assert weight_bytes(lambda x: x) is None


def test_the_memory_read_is_measured_in_ms_per_mb_with_its_spread() -> None:
    read = measure_memory_read(buffer_mb=64, passes=3)
    assert set(read) == {"ms_per_mb", "gb_per_s", "spread", "buffer_mb", "passes"}
    assert read["ms_per_mb"] > 0 and read["spread"] >= 0
    # The two are the same figure: 1 MB at G GB/s takes 1 / G ms.
    assert read["ms_per_mb"] == pytest.approx(1 / read["gb_per_s"])
    assert (read["buffer_mb"], read["passes"]) == (64, 3)


@pytest.mark.parametrize(("buffer_mb", "passes"), [(8, 5), (8192, 5), (256, 1), (256, 100)])
def test_the_memory_read_is_bounded(buffer_mb: int, passes: int) -> None:
    with pytest.raises(ValueError, match="accepted: 16..4096 MB, 3..50 passes"):
        measure_memory_read(buffer_mb, passes)
