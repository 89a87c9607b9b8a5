"""preprocess(processes=N): the same tensors, order, labels and errors as one process."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

from services.preprocess.datasets import Sample
from services.preprocess.pipeline import preprocess
from shared.manifest import Input


def test_a_pool_of_processes_prepares_the_same_tensors_in_the_same_order(tmp_path: Path) -> None:
    samples = []
    for index in range(12):
        buffer = io.BytesIO()
        Image.new("RGB", (40 + index, 30), (index * 20, 100, 200 - index)).save(buffer, "PNG")
        path = tmp_path / f"{index:02d}.png"
        path.write_bytes(buffer.getvalue())
        samples.append(Sample(id=path.name, path=path, label=index % 3))
    (tmp_path / "broken.png").write_bytes(b"not an image")
    samples.insert(5, Sample(id="broken.png", path=tmp_path / "broken.png", label=0))
    spec = Input.model_validate(
        {
            "shape": (3, 16, 16),
            "steps": [
                {"decode": {}},
                {"resize": {"size": [16, 16]}},
                {"layout": {"order": "NCHW"}},
                {"cast": {"element_type": "float32"}},
            ],
        }
    )
    advanced: list[int] = []
    alone = preprocess(samples, spec, batch_size=2)
    pooled = preprocess(samples, spec, batch_size=2, processes=2, progress=advanced.append)
    assert np.array_equal(alone.tensors, pooled.tensors)
    assert pooled.ids == alone.ids and pooled.labels == alone.labels
    assert [str(e) for e in pooled.errors] == [str(e) for e in alone.errors] != []
    assert sum(advanced) == len(samples)
