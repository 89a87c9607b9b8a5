"""Decoding errors a person can act on, a pixel budget per image, reduced-scale JPEGs."""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from services.core.catalogue import resolve_model
from services.core.manifest_sections import DecodeStep, ResizeStep
from services.preprocess.datasets import DatasetError, Sample
from services.preprocess.decode import DRAFT_MARGIN, DecodeError, decode_one
from services.preprocess.ops import BATCH_OPS
from services.preprocess.pipeline import NoSamplePrepared, preprocess
from shared.settings import get_settings

RGB = DecodeStep(op="decode", color_mode="RGB")
STD = np.asarray([0.229, 0.224, 0.225])


@pytest.fixture(autouse=True)
def fresh_settings(data_dir: Path) -> Iterator[None]:
    yield
    get_settings.cache_clear()


def photo_jpeg(width: int, height: int, seed: int = 0) -> bytes:
    """Smooth colour waves plus noise: compresses and resamples like a photo."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    waves = [
        127 + 100 * np.sin(fx * x + fy * y + phase)
        for fx, fy, phase in rng.uniform(0.002, 0.03, (3, 3))
    ]
    image = np.stack(waves, -1) + rng.normal(0, 12, (height, width, 3))
    buffer = io.BytesIO()
    Image.fromarray(np.clip(image, 0, 255).astype(np.uint8)).save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims width x height but holds almost no pixel data: decoding it
    would fail as truncated, so only a check made on the header can name its size."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64))


def sample(folder: Path, name: str, data: bytes) -> Sample:
    path = folder / name
    path.write_bytes(data)
    return Sample(id=name, path=path, label=None)


def test_a_decode_error_names_the_file_not_a_buffer(tmp_path: Path) -> None:
    good = sample(tmp_path, "good.jpg", photo_jpeg(64, 48))
    bad = sample(tmp_path, "cat.jpg", b"<html>404 not found</html>")
    prepared = preprocess([good, bad], resolve_model("resnet18").inputs[0])
    (error,) = prepared.errors
    assert str(error) == (
        "cat.jpg: cannot decode image: not a format Pillow recognises (JPEG, PNG, ...)"
    )
    with pytest.raises(DecodeError) as info:
        decode_one(bad.path.read_bytes(), RGB, name="cat.jpg", max_pixels=10**6)
    assert str(info.value).startswith("cat.jpg: ") and "BytesIO" not in str(info.value)


def test_an_all_bad_dataset_lists_the_first_files_and_reasons(tmp_path: Path) -> None:
    samples = [sample(tmp_path, f"bad{i}.jpg", b"junk" * i) for i in range(8)]
    with pytest.raises(NoSamplePrepared) as info:
        preprocess(samples, resolve_model("resnet18").inputs[0], batch_size=3)
    message = str(info.value)
    assert isinstance(info.value, DatasetError)
    assert message.startswith("dataset: none of the 8 samples could be prepared: bad0.jpg: ")
    for i in range(5):
        assert f"bad{i}.jpg: cannot decode image" in message
    assert "bad5.jpg" not in message
    assert message.endswith("; and 3 more")


@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
def test_a_huge_image_is_refused_from_its_header_by_name(tmp_path: Path) -> None:
    huge = sample(tmp_path, "huge.png", png_header_only(12000, 12000))
    small = sample(tmp_path, "small.jpg", photo_jpeg(300, 300))
    prepared = preprocess([huge, small], resolve_model("resnet18").inputs[0])
    assert prepared.ids == ["small.jpg"]
    (error,) = prepared.errors
    assert str(error) == (
        "huge.png: image of 12000x12000 pixels (144.0 megapixels) is over the budget of "
        "50.0 megapixels per image; accepted: smaller images, or a larger "
        "BENCHSTACK_MAX_IMAGE_PIXELS"
    )


def test_the_budget_is_a_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHSTACK_MAX_IMAGE_PIXELS", "50000")
    get_settings.cache_clear()
    photo = sample(tmp_path, "photo.jpg", photo_jpeg(300, 200))
    with pytest.raises(NoSamplePrepared, match=r"photo\.jpg: image of 300x200 pixels .* 0\.1 mega"):
        preprocess([photo], resolve_model("resnet18").inputs[0])


def test_a_large_jpeg_decodes_reduced_but_never_below_twice_the_target() -> None:
    data = photo_jpeg(2400, 1800)
    resize = ResizeStep(op="resize", size=256)
    reduced = decode_one(data, RGB, name="big.jpg", max_pixels=10**8, resize=resize)
    assert reduced.shape == (900, 1200, 3)  # 1/2 scale: 1/4 would fall below 2 x 256
    assert min(reduced.shape[:2]) >= DRAFT_MARGIN * 256
    # The budget applies to what is decoded: the reduced image fits where the full one not.
    decode_one(data, RGB, name="big.jpg", max_pixels=1_200_000, resize=resize)
    with pytest.raises(DecodeError, match="2400x1800 pixels"):
        decode_one(data, RGB, name="big.jpg", max_pixels=1_200_000)


def test_reduced_decoding_matches_a_full_decode_closely(tmp_path: Path) -> None:
    big = sample(tmp_path, "big.jpg", photo_jpeg(2400, 1800, seed=4))
    spec = resolve_model("resnet18").inputs[0]
    (ours,) = preprocess([big], spec).tensors
    batch: list[np.ndarray] | np.ndarray = [
        decode_one(big.path.read_bytes(), RGB, name="big.jpg", max_pixels=10**8)
    ]
    for step in spec.steps[1:]:
        batch = BATCH_OPS[step.op](batch, step)
    (full,) = np.asarray(batch)
    # In 0..255 pixel units: reduced-scale decoding moves pixels by rounding, not content.
    diff = np.abs((ours - full) * STD[:, None, None] * 255.0)
    assert diff.mean() < 0.5
    assert np.percentile(diff, 99) <= 2.0
