"""preprocess_batch against torchvision's PIL pipeline on photo-like JPEGs.

No real photos can be downloaded here: the JPEGs are generated deterministically with the
benchmark's photo-like generator (gradients, shapes, noise; quality 90).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.preprocess_throughput import (
    benchstack_spec,
    photo_like_jpeg,
    torchvision_pipeline,
)
from services.preprocess.batch import preprocess_batch
from services.preprocess.datasets import Sample

pytest.importorskip("torchvision", reason="torchvision is the reference being compared to")


def test_photo_size_jpegs_are_bit_identical_to_torchvision(tmp_path: Path) -> None:
    # 500x375 is below twice the resize target, so no draft decoding applies: exact match.
    paths = []
    for seed in range(3):
        path = tmp_path / f"photo-{seed}.jpg"
        path.write_bytes(photo_like_jpeg(500, 375, seed=seed))
        paths.append(path)
    samples = [Sample(id=p.name, path=p, label=None) for p in paths]

    ours, kept, errors = preprocess_batch(samples, benchstack_spec())

    reference = torchvision_pipeline()
    expected = np.stack([reference(p).numpy() for p in paths])
    assert errors == [] and len(kept) == 3
    assert ours is not None and ours.dtype == expected.dtype
    assert np.array_equal(ours, expected)
