"""`benchstack scale-training`: the training scaling campaign as local ranks, from the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import benchstack


def test_world_sizes_are_checked_before_any_rank_starts(data_dir: Path) -> None:
    bad = benchstack(data_dir, "scale-training", "resnet18", "--world-sizes", "1,x")
    assert bad.returncode == 1 and "--world-sizes: '1,x'; give ranks per point" in bad.stderr
    over = benchstack(data_dir, "scale-training", "resnet18", "--world-sizes", "1,1")
    assert over.returncode == 1 and "--world-sizes: [1, 1]; accepted: 1..8 distinct" in over.stderr


def test_one_rank_point_is_measured_and_printed_as_json(data_dir: Path) -> None:
    pytest.importorskip("torch", reason="training scaling trains with torch")
    result = benchstack(
        data_dir, "scale-training", "resnet18", "--world-sizes", "1", "--batch-size", "2",
        "--steps", "2", "--warmup", "1", "--image-size", "32", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    (point,) = found["points"]
    assert point["world_size"] == 1 and point["speedup"] == 1.0 and point["weights_agree"]
    listed = json.loads(benchstack(data_dir, "results", "--json").stdout)
    assert len(listed) == 1, listed
