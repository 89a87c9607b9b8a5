"""Decoding where the model runs (services/preprocess/device_decode.py): the fused fast
path with torchvision's decoder, checked here on the CPU device (torchvision's
libjpeg-turbo), where it must store what the CPU's fused path stores within a level;
on a CUDA device (nvJPEG) only where a GPU is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from benchmarks.preprocess_throughput import benchstack_spec, photo_like_jpeg
from services.preprocess import device_decode
from services.preprocess.batch import finish, planar_steps, preprocess_batch
from services.preprocess.datasets import Sample
from services.preprocess.device_decode import (
    _Checked,
    _groups,
    _resized_crop,
    _resized_crops,
    decode_device,
    prepare_on_device,
    unavailable_reason,
)
from services.preprocess.pipeline import preprocess
from services.preprocess.shard_keys import shard_key

torch = pytest.importorskip("torch", reason="decoding on a device needs torch")
pytest.importorskip("torchvision.io", reason="decoding on a device needs torchvision")

PHOTOS = Path(__import__("sklearn").__file__).parent / "datasets" / "images"  # real JPEGs


def _samples(tmp_path: Path) -> list[Sample]:
    """Two real photos, two photo-like JPEGs (one portrait), and a PNG of noise (which
    the device path decodes on the host: its pixels must land the right way round)."""
    samples = [Sample(id=p.name, path=p, label=None) for p in sorted(PHOTOS.glob("*.jpg"))]
    for name, (width, height) in {"wide.jpg": (500, 375), "tall.jpg": (300, 420)}.items():
        path = tmp_path / name
        path.write_bytes(photo_like_jpeg(width, height, seed=width))
        samples.append(Sample(id=name, path=path, label=None))
    png = tmp_path / "noise.png"
    noise = np.random.default_rng(0).integers(0, 256, (300, 260, 3), dtype=np.uint8)
    Image.fromarray(noise).save(png)
    samples.append(Sample(id="noise.png", path=png, label=None))
    return samples


def test_cpu_device_stores_the_cpu_fused_paths_crops_within_one_level(tmp_path: Path) -> None:
    samples = _samples(tmp_path)
    spec = benchstack_spec("fast")
    on_device, kept, errors = prepare_on_device(samples, spec, device="cpu", stored=True)
    on_cpu, cpu_kept, _ = preprocess_batch(samples, spec, stored=True)
    assert errors == [] and kept == samples == cpu_kept
    assert on_device is not None and on_cpu is not None
    assert on_device.dtype == np.uint8 and on_device.shape == on_cpu.shape == (5, 3, 224, 224)
    # The same decode (libjpeg-turbo, accurate IDCT, smooth upsampling); the resize in
    # float32 rounds where torch's 8-bit kernel rounds in fixed point.
    difference = np.abs(on_device.astype(np.int16) - on_cpu.astype(np.int16))
    assert difference.max() <= 1, f"max difference {difference.max()} levels"
    finished, _, _ = prepare_on_device(samples, spec, device="cpu")
    assert finished is not None
    np.testing.assert_array_equal(finished, finish(on_device, spec))


def test_each_bad_file_is_named_and_the_rest_are_kept_in_order(tmp_path: Path) -> None:
    good = _samples(tmp_path)[2:4]
    damaged = tmp_path / "damaged.jpg"
    damaged.write_bytes(b"\xff\xd8" + b"\x00" * 200)
    huge = tmp_path / "huge.jpg"
    huge.write_bytes(photo_like_jpeg(1600, 1200, seed=3))
    missing = Sample(id="missing.jpg", path=tmp_path / "missing.jpg", label=None)
    samples = [
        Sample(id="damaged.jpg", path=damaged, label=None),
        good[0],
        missing,
        Sample(id="huge.jpg", path=huge, label=None),
        good[1],
    ]
    array, kept, errors = prepare_on_device(
        samples, benchstack_spec("fast"), device="cpu", stored=True, max_image_pixels=1_000_000
    )
    assert kept == good and array is not None and len(array) == 2
    reasons = {error.sample_id: error.message for error in errors}
    assert set(reasons) == {"damaged.jpg", "missing.jpg", "huge.jpg"}
    assert reasons["damaged.jpg"].startswith("cannot decode image")
    assert reasons["missing.jpg"].startswith("cannot read file")
    assert "over the budget" in reasons["huge.jpg"]


def test_a_batch_that_fails_in_one_call_is_decoded_one_by_one(tmp_path: Path) -> None:
    """A JPEG whose header reads but whose data does not fails the group's single call;
    each is then decoded alone, that one on the CPU too, whose reason names it; the
    others are kept."""
    good = _samples(tmp_path)[2]
    broken = tmp_path / "broken.jpg"
    data = photo_like_jpeg(500, 375, seed=9)
    broken.write_bytes(data[: len(data) // 3])
    samples = [good, Sample(id="broken.jpg", path=broken, label=None), good]
    array, kept, errors = prepare_on_device(samples, benchstack_spec("fast"), device="cpu")
    assert [s.id for s in kept] == [good.id, good.id]
    assert array is not None and len(array) == 2
    assert [e.sample_id for e in errors] == ["broken.jpg"]
    assert errors[0].message.startswith("cannot decode image")


def test_a_cmyk_jpeg_is_decoded_on_the_host_as_the_cpu_path_decodes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    noise = np.random.default_rng(1).integers(0, 256, (300, 400, 3), dtype=np.uint8)
    path = tmp_path / "cmyk.jpg"
    Image.fromarray(noise).convert("CMYK").save(path, "JPEG")
    sample = Sample(id="cmyk.jpg", path=path, label=None)
    ycbcr = _samples(tmp_path)[2]
    sent: list[str] = []  # what went to the device's decoder
    decode_jpegs = device_decode._decode_jpegs

    def recorded(items: Any, decode: Any, device: str) -> Any:
        sent.extend(item.sample.id for item in items)
        return decode_jpegs(items, decode, device)

    monkeypatch.setattr(device_decode, "_decode_jpegs", recorded)
    spec = benchstack_spec("fast")
    on_device, kept, errors = prepare_on_device([sample, ycbcr], spec, device="cpu", stored=True)
    on_cpu, _, _ = preprocess_batch([sample, ycbcr], spec, stored=True)
    assert sent == [ycbcr.id]  # the YCbCr JPEG went to the device, the CMYK one did not
    assert errors == [] and kept == [sample, ycbcr]
    assert on_device is not None and on_cpu is not None
    assert np.abs(on_device.astype(np.int16) - on_cpu.astype(np.int16)).max() <= 1


def test_groups_hold_at_most_the_pixel_bound_and_keep_the_order(tmp_path: Path) -> None:
    sample = Sample(id="x", path=tmp_path / "x", label=None)
    items = [_Checked(sample, b"", pixels, jpeg=True) for pixels in (40, 50, 30, 200, 10)]
    groups = list(_groups(items, 100))
    assert [[item.pixels for item in group] for group in groups] == [[40, 50], [30], [200], [10]]


def test_images_of_one_size_resize_together_to_the_bits_of_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    steps = planar_steps(benchstack_spec("fast"))
    assert steps is not None
    resize, crop, _ = steps
    generator = torch.Generator().manual_seed(0)
    sizes = [(375, 500), (420, 300), (375, 500), (375, 500), (256, 256), (420, 300)]
    images = [
        torch.randint(0, 256, (3, h, w), dtype=torch.uint8, generator=generator) for h, w in sizes
    ]
    alone = [_resized_crop(image[None], resize, crop)[0] for image in images]
    calls: list[int] = []
    interpolate = torch.nn.functional.interpolate

    def counted(batch: Any, **kwargs: Any) -> Any:
        calls.append(len(batch))
        return interpolate(batch, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "interpolate", counted)
    # Room for two 375x500 images per call: that size's three take two calls.
    monkeypatch.setattr(device_decode, "MAX_RESIZE_VALUES", 2 * 3 * 375 * 500)
    together = _resized_crops(images, resize, crop)
    # 375x500: 2 + 1; 420x300: 2; 256x256 is already the resize's size (a crop only).
    assert sorted(calls) == [1, 2, 2]
    assert len(together) == len(images)
    for cropped, expected in zip(together, alone, strict=True):
        assert cropped.shape == (3, 224, 224)
        assert torch.equal(cropped, expected)
    # On a CPU one at a time: one call per image that needs a resize.
    calls.clear()
    one_by_one = _resized_crops(images, resize, crop, together=False)
    assert calls == [1] * 5
    assert all(torch.equal(a, b) for a, b in zip(one_by_one, alone, strict=True))


def test_only_a_cuda_run_in_the_fast_mode_decodes_on_its_device() -> None:
    fast, reference = benchstack_spec("fast"), benchstack_spec("reference")
    assert decode_device(fast, "cpu") is None
    assert decode_device(reference, "cuda") is None
    assert decode_device(fast, "gpu") is None  # not a device name: the run refuses it
    expected = None if unavailable_reason("cuda:0") else "cuda:0"
    assert decode_device(fast, "cuda:0") == expected


def test_a_shard_decoded_on_a_gpu_has_a_key_of_its_own(tmp_path: Path) -> None:
    spec = benchstack_spec("fast")
    assert shard_key(["a"], spec, "d") != shard_key(["a"], spec, "d", decoder="nvjpeg")
    assert shard_key(["a"], spec, "d") == shard_key(["a"], spec, "d", decoder="")


def test_the_pipeline_on_a_cpu_run_says_the_cpu_decoded(tmp_path: Path) -> None:
    prepared = preprocess(_samples(tmp_path)[:2], benchstack_spec("fast"), device="cpu")
    assert prepared.decoder == "cpu" and len(prepared.tensors) == 2


@pytest.mark.skipif(not torch.cuda.is_available(), reason="nvJPEG needs a CUDA device (none here)")
def test_nvjpeg_crops_are_close_to_the_cpu_paths_on_real_photos(tmp_path: Path) -> None:
    samples = _samples(tmp_path)
    spec = benchstack_spec("fast")
    assert decode_device(spec, "cuda") == "cuda"
    on_gpu = preprocess(samples, spec, device="cuda", stored=True)
    on_cpu, _, _ = preprocess_batch(samples, spec, stored=True)
    assert on_gpu.decoder == "nvjpeg (cuda)" and on_cpu is not None
    difference = np.abs(on_gpu.tensors.astype(np.int16) - on_cpu.astype(np.int16))
    print(f"nvJPEG vs CPU: max {difference.max()} levels, mean {difference.mean():.3f}")
    # nvJPEG's IDCT and upsampling are its own: a level or two apart, rarely more.
    assert difference.mean() < 1.0
