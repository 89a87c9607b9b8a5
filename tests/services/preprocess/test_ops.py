"""Preprocessing against torchvision's transforms as the reference implementation."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as tvf

from services.core.catalogue import resolve_model
from services.core.manifest_sections import CenterCropStep, DecodeStep, ResizeStep
from services.preprocess.datasets import Sample, make_synthetic, resolve_dataset, scan_folder
from services.preprocess.decode import DecodeError, decode_one
from services.preprocess.ops import center_crop, resize
from services.preprocess.pipeline import preprocess
from services.preprocess.shard_keys import shard_key

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def _jpeg(width: int, height: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    image = np.stack(
        [(x * 255 // width), (y * 255 // height), rng.integers(0, 255, (height, width))], -1
    )
    buffer = io.BytesIO()
    Image.fromarray(image.astype(np.uint8)).save(buffer, "JPEG", quality=95)
    return buffer.getvalue()


@pytest.fixture
def images(tmp_path: Path) -> list[Sample]:
    samples = []
    for i, (w, h) in enumerate([(500, 375), (375, 500), (640, 480), (256, 256)]):
        path = tmp_path / f"img{i}.jpg"
        path.write_bytes(_jpeg(w, h, i))
        samples.append(Sample(id=path.name, path=path, label=None))
    return samples


def _reference(path: Path, tensor_path: bool) -> np.ndarray:
    pil = Image.open(path).convert("RGB")
    if tensor_path:
        # An independent implementation: torchvision's tensor kernels (antialiased bilinear).
        tensor = tvf.pil_to_tensor(pil)
        tensor = tvf.resize(
            tensor, [256], interpolation=v2.InterpolationMode.BILINEAR, antialias=True
        )
        tensor = tvf.center_crop(tensor, [224, 224]).float() / 255.0
    else:
        pipeline = v2.Compose([v2.Resize(256), v2.CenterCrop(224), v2.PILToTensor()])
        tensor = pipeline(pil).float() / 255.0
    return tvf.normalize(tensor, MEAN, STD).numpy()


def test_imagenet_pipeline_matches_torchvision_pil(images: list[Sample]) -> None:
    spec = resolve_model("resnet18").inputs[0]
    prepared = preprocess(images, spec, batch_size=3)
    assert prepared.tensors.shape == (4, 3, 224, 224)
    assert prepared.tensors.dtype == np.float32
    for sample, tensor in zip(images, prepared.tensors, strict=True):
        expected = _reference(sample.path, tensor_path=False)
        # Same resampling as torchvision's PIL path: equal up to float rounding.
        assert np.abs(tensor - expected).max() < 1e-5


def test_imagenet_pipeline_within_pixel_tolerance_of_tensor_kernels(images: list[Sample]) -> None:
    spec = resolve_model("resnet18").inputs[0]
    prepared = preprocess(images, spec)
    for sample, tensor in zip(images, prepared.tensors, strict=True):
        expected = _reference(sample.path, tensor_path=True)
        # Back in 0..255 pixel units: two resamplers differ by rounding, never by content.
        diff = np.abs((tensor - expected) * np.asarray(STD)[:, None, None] * 255.0)
        assert np.percentile(diff, 99) <= 2.0
        assert diff.mean() < 0.6


def test_keep_aspect_resize_sets_shorter_side() -> None:
    image = np.zeros((375, 500, 3), np.uint8)
    (out,) = resize([image], ResizeStep(op="resize", size=256))
    assert out.shape == (256, 341, 3)
    (square,) = resize([image], ResizeStep(op="resize", size=100, keep_aspect=False))
    assert square.shape == (100, 100, 3)


def test_center_crop_matches_torchvision_offsets() -> None:
    image = np.arange(7 * 9 * 3, dtype=np.uint8).reshape(7, 9, 3)
    ours = center_crop([image], CenterCropStep(op="center_crop", size=(4, 5)))[0]
    theirs = tvf.center_crop(torch.from_numpy(image).permute(2, 0, 1), [4, 5]).permute(1, 2, 0)
    assert np.array_equal(ours, theirs.numpy())


def test_center_crop_refuses_small_images() -> None:
    with pytest.raises(ValueError, match="smaller than the crop"):
        center_crop([np.zeros((10, 10, 3), np.uint8)], CenterCropStep(op="center_crop", size=20))


def test_bgr_and_grey_decoding() -> None:
    data = _jpeg(32, 16, 0)
    budget = {"name": "x.jpg", "max_pixels": 10_000}
    rgb = decode_one(data, DecodeStep(op="decode", color_mode="RGB"), **budget)
    bgr = decode_one(data, DecodeStep(op="decode", color_mode="BGR"), **budget)
    grey = decode_one(data, DecodeStep(op="decode", color_mode="L"), **budget)
    assert np.array_equal(rgb[..., ::-1], bgr)
    assert grey.shape == (16, 32, 1)


def test_decode_errors_are_reported_per_file(images: list[Sample], tmp_path: Path) -> None:
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not a jpeg at all")
    samples = [images[0], Sample(id="broken.jpg", path=broken, label=None), images[1]]
    prepared = preprocess(samples, resolve_model("resnet18").inputs[0])
    assert prepared.ids == [images[0].id, images[1].id]
    assert len(prepared.errors) == 1
    assert prepared.errors[0].sample_id == "broken.jpg"
    assert "cannot decode image" in str(prepared.errors[0])
    with pytest.raises(DecodeError):
        decode_one(b"", DecodeStep(op="decode"), name="empty.jpg", max_pixels=10_000)


def test_synthetic_dataset_is_seeded_and_labelled(tmp_path: Path) -> None:
    one = make_synthetic(tmp_path / "a", 6, seed=3)
    two = make_synthetic(tmp_path / "b", 6, seed=3)
    files_one = sorted(p.relative_to(one) for p in one.rglob("*.jpg"))
    assert files_one == sorted(p.relative_to(two) for p in two.rglob("*.jpg"))
    for rel in files_one:
        assert (one / rel).read_bytes() == (two / rel).read_bytes()
        with Image.open(one / rel) as image:
            assert image.size[0] >= 333 and image.size[1] >= 333
    samples, classes = scan_folder(one)
    assert classes and all(s.label is not None for s in samples)


def test_folder_dataset_flat_and_errors(tmp_path: Path) -> None:
    (tmp_path / "x.jpg").write_bytes(_jpeg(20, 20, 1))
    dataset = resolve_dataset(str(tmp_path), count=None, seed=0, cache_dir=tmp_path)
    assert [s.label for s in dataset.samples] == [None]
    with pytest.raises(ValueError, match="dataset: .* is not a folder"):
        resolve_dataset(str(tmp_path / "nope"), count=None, seed=0, cache_dir=tmp_path)


def test_shard_key_depends_on_ids_and_steps() -> None:
    spec18 = resolve_model("resnet18").inputs[0]
    spec_eff = resolve_model("efficientnet_b0").inputs[0]  # bicubic resize
    assert shard_key(["a", "b"], spec18) == shard_key(["a", "b"], spec18)
    assert shard_key(["a", "b"], spec18) != shard_key(["b", "a"], spec18)
    assert shard_key(["a", "b"], spec18) != shard_key(["a", "b"], spec_eff)
