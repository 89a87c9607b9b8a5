"""preprocess(processes=N): the same tensors, order, labels and errors as one process,
written by the pool's children into rows shared with the caller; and when a pool pays."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from benchmarks.preprocess_throughput import benchstack_spec, photo_like_jpeg
from services.core.manifest_sections import Input
from services.preprocess import pipeline
from services.preprocess.datasets import Sample
from services.preprocess.pipeline import preprocess


@pytest.fixture
def pool_for_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pool even for a few small files (the byte threshold would keep them in-process)."""
    monkeypatch.setattr(pipeline, "MIN_BYTES_PER_PROCESS", 0)


def _broken(folder: Path) -> Sample:
    (folder / "broken.png").write_bytes(b"not an image")
    return Sample(id="broken.png", path=folder / "broken.png", label=0)


@pytest.mark.usefixtures("pool_for_any_size")
def test_a_pool_of_processes_prepares_the_same_tensors_in_the_same_order(tmp_path: Path) -> None:
    samples = []
    for index in range(12):
        buffer = io.BytesIO()
        Image.new("RGB", (40 + index, 30), (index * 20, 100, 200 - index)).save(buffer, "PNG")
        path = tmp_path / f"{index:02d}.png"
        path.write_bytes(buffer.getvalue())
        samples.append(Sample(id=path.name, path=path, label=index % 3))
    samples.insert(5, _broken(tmp_path))
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
    assert pipeline.pool_size(samples, 2, chunks=7) == 2
    advanced: list[int] = []
    alone = preprocess(samples, spec, batch_size=2)
    pooled = preprocess(samples, spec, batch_size=2, processes=2, progress=advanced.append)
    assert np.array_equal(alone.tensors, pooled.tensors)
    assert pooled.ids == alone.ids and pooled.labels == alone.labels
    assert [str(e) for e in pooled.errors] == [str(e) for e in alone.errors] != []
    assert sum(advanced) == len(samples)


def _photos(folder: Path, count: int) -> list[Sample]:
    samples = []
    for index in range(count):
        path = folder / f"{index:02d}.jpg"
        path.write_bytes(photo_like_jpeg(300 + 7 * index, 260, seed=index))
        samples.append(Sample(id=path.name, path=path, label=index))
    return samples


@pytest.mark.usefixtures("pool_for_any_size")
@pytest.mark.parametrize("stored", [True, False], ids=["stored 8-bit", "finished float32"])
def test_the_fast_paths_pool_writes_the_same_rows_the_caller_returns_uncopied(
    tmp_path: Path, stored: bool
) -> None:
    samples = _photos(tmp_path, 12)
    spec = benchstack_spec("fast")
    alone = preprocess(samples, spec, batch_size=3, stored=stored)
    pooled = preprocess(samples, spec, batch_size=3, processes=2, stored=stored)
    assert pooled.tensors.dtype == (np.uint8 if stored else np.float32)
    assert np.array_equal(alone.tensors, pooled.tensors)
    assert pooled.ids == alone.ids == [s.id for s in samples]
    # The children's rows are the result: nothing was joined (a join owns its data).
    assert not pooled.tensors.flags.owndata and not alone.tensors.flags.owndata


@pytest.mark.usefixtures("pool_for_any_size")
def test_a_failed_sample_leaves_a_gap_the_result_closes(tmp_path: Path) -> None:
    samples = _photos(tmp_path, 9)
    samples.insert(4, _broken(tmp_path))
    spec = benchstack_spec("fast")
    alone = preprocess(samples, spec, batch_size=3, stored=True)
    pooled = preprocess(samples, spec, batch_size=3, processes=2, stored=True)
    assert len(pooled.tensors) == 9
    assert np.array_equal(alone.tensors, pooled.tensors)
    assert pooled.ids == alone.ids and "broken.png" not in pooled.ids
    assert [e.sample_id for e in pooled.errors] == ["broken.png"]


def test_a_pool_starts_only_for_enough_image_bytes(tmp_path: Path) -> None:
    samples = _photos(tmp_path, 4)
    size = sum(s.path.stat().st_size for s in samples)
    # 4 files of ~15 kB: far under one process's share, however many cores and chunks.
    assert size < pipeline.MIN_BYTES_PER_PROCESS
    assert pipeline.pool_size(samples, processes=8, chunks=4) == 1
    # Ten times as many bytes as two processes need: two, as many as the chunks allow.
    many = samples * (2 * pipeline.MIN_BYTES_PER_PROCESS * 10 // size)
    assert pipeline.pool_size(many, processes=2, chunks=len(many)) == 2
    assert pipeline.pool_size(many, processes=8, chunks=4) == 2  # 2 chunks per process
    # A file that cannot be read counts for nothing here; its chunk reports it.
    missing = [Sample(id="gone.jpg", path=tmp_path / "gone.jpg", label=None)] * 1000
    assert pipeline.pool_size(missing, processes=2, chunks=100) == 1
