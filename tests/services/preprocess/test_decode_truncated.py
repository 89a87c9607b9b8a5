"""A JPEG too short for the size its header claims is a per-sample error naming the file,
never a valid sample of grey padding; JPEGs that are merely very compressible decode."""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageFile

from services.core.catalogue import resolve_model
from services.core.manifest_sections import DecodeStep, ResizeStep
from services.preprocess.datasets import Sample
from services.preprocess.decode import DecodeError, decode_one
from services.preprocess.pipeline import preprocess
from shared.settings import get_settings

RGB = DecodeStep(op="decode", color_mode="RGB")
RESIZE = ResizeStep(op="resize", size=256)


@pytest.fixture(autouse=True)
def fresh_settings(data_dir: Path) -> Iterator[None]:
    yield
    get_settings.cache_clear()


def jpeg(array: np.ndarray, **options: object) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, "JPEG", quality=80, **options)
    return buffer.getvalue()


def claims(data: bytes, width: int, height: int) -> bytes:
    """``data`` with its start-of-frame header saying ``width`` x ``height``."""
    at = data.find(b"\xff\xc0")
    patched = bytearray(data)
    patched[at + 5 : at + 9] = struct.pack(">HH", height, width)
    return bytes(patched)


def small_noise() -> np.ndarray:
    return np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("resize", [None, RESIZE])
def test_a_header_claiming_7000_squared_over_a_3_kb_body_is_refused(
    fast: bool, resize: ResizeStep | None
) -> None:
    data = claims(jpeg(small_noise()), 7000, 7000)
    assert len(data) < 4000
    with pytest.raises(DecodeError) as info:
        decode_one(data, RGB, name="big.jpg", max_pixels=10**8, resize=resize, fast=fast)
    assert str(info.value).startswith("big.jpg: "), info.value
    if not fast:  # libjpeg-turbo through simplejpeg refuses it on its own, in its words
        assert "truncated image: its header says 7000x7000 pixels" in str(info.value)


def test_in_a_dataset_it_is_one_sample_error_and_the_others_are_kept(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.jpg", tmp_path / "bad.jpg"
    good.write_bytes(jpeg(small_noise()))
    bad.write_bytes(claims(jpeg(small_noise()), 7000, 7000))
    spec = resolve_model("resnet18").inputs[0]
    samples = [Sample(id="good", path=good, label=None), Sample(id="bad", path=bad, label=None)]
    prepared = preprocess(samples, spec)
    assert prepared.ids == ["good"]
    (error,) = prepared.errors
    assert "bad" in str(error) and "truncated image" in str(error), error


@pytest.mark.parametrize("progressive", [False, True])
def test_a_flat_image_that_compresses_to_little_still_decodes(progressive: bool) -> None:
    flat = np.full((2000, 3000, 3), 90, dtype=np.uint8)
    data = jpeg(flat, progressive=progressive)
    for fast in (False, True):
        array = decode_one(data, RGB, name="flat.jpg", max_pixels=10**8, fast=fast)
        assert array.shape == (2000, 3000, 3)


def test_a_cut_off_file_stays_an_error_when_a_library_allows_truncated_images() -> None:
    data = jpeg(np.random.default_rng(1).integers(0, 255, (512, 512, 3), dtype=np.uint8))
    ImageFile.LOAD_TRUNCATED_IMAGES = True  # as some libraries set it, process-wide
    try:
        with pytest.raises(DecodeError, match="cut.jpg: cannot decode image: image file is trunc"):
            decode_one(data[: len(data) // 2], RGB, name="cut.jpg", max_pixels=10**8)
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = False
