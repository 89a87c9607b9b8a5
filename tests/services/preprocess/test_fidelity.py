"""Input.fidelity: "reference" keeps torchvision's bits; "fast" decodes the same pixels,
differs by at most one level after its resize, and changes no prediction of a trained
model."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from benchmarks.preprocess_throughput import benchstack_spec
from services.core.manifest_sections import (
    CenterCropStep,
    DecodeStep,
    LayoutStep,
    NormalizeStep,
    ResizeStep,
)
from services.preprocess.batch import preprocess_batch
from services.preprocess.datasets import Sample, scan_folder
from services.preprocess.decode import DecodeError, decode_one
from services.preprocess.ops import (
    center_crop,
    layout,
    normalize,
    normalize_to_nchw,
    resize_crop_into,
    resize_fast,
)
from services.preprocess.pipeline import preprocess

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
PHOTOS = Path(__import__("sklearn").__file__).parent / "datasets" / "images"  # real JPEGs


def photo_samples() -> list[Sample]:
    return [Sample(id=p.name, path=p, label=None) for p in sorted(PHOTOS.glob("*.jpg"))]


def test_reference_is_bit_identical_to_torchvision_on_real_photos() -> None:
    transforms = pytest.importorskip("torchvision.transforms", reason="torchvision not installed")
    pipeline = transforms.Compose(
        [
            transforms.Resize(256),
            transforms.CenterCrop(224),
            transforms.ToTensor(),
            transforms.Normalize(MEAN, STD),
        ]
    )
    samples = photo_samples()
    assert len(samples) == 2  # china.jpg, flower.jpg
    got, _, _ = preprocess_batch(samples, benchstack_spec("reference"))
    assert got is not None
    for tensor, sample in zip(got, samples, strict=True):
        with Image.open(sample.path) as image:
            expected = pipeline(image.convert("RGB")).numpy()
        assert np.array_equal(tensor, expected)


def test_fast_differs_from_reference_by_at_most_one_level_on_real_photos() -> None:
    """The modes decode the same pixels; torch's 8-bit resize rounds a few of them one
    level away from Pillow's (it was up to 49 levels with libjpeg-turbo's fast settings)."""
    reference, _, _ = preprocess_batch(photo_samples(), benchstack_spec("reference"))
    fast, _, _ = preprocess_batch(photo_samples(), benchstack_spec("fast"))
    assert reference is not None and fast is not None
    assert fast.shape == reference.shape and fast.dtype == reference.dtype
    difference = np.abs(fast - reference)
    one_level = 1 / 255 / min(STD)  # the largest step of one 8-bit level after normalize
    assert difference.mean() > 0, "the fast mode ran (its resize is torch's, not Pillow's)"
    assert difference.max() <= one_level * (1 + 1e-5)


def test_the_fused_fast_path_gives_the_separate_fast_steps_bits_on_real_photos() -> None:
    spec = benchstack_spec("fast")
    decode, resize, crop, normalize_step, layout_step = spec.steps
    assert isinstance(resize, ResizeStep) and isinstance(crop, CenterCropStep)
    assert isinstance(normalize_step, NormalizeStep) and isinstance(layout_step, LayoutStep)
    fused, _, _ = preprocess_batch(photo_samples(), spec)
    # The same fast steps one by one: decode (whole), resize_fast, crop, normalize, NCHW.
    images = [
        decode_one(
            s.path.read_bytes(), decode, name=s.id, max_pixels=10**8, resize=resize, fast=True
        )
        for s in photo_samples()
    ]
    separate = layout(
        normalize(center_crop(resize_fast(images, resize), crop), normalize_step), layout_step
    )
    assert fused is not None and fused.flags.c_contiguous
    assert np.array_equal(fused, separate)


@pytest.mark.parametrize(
    ("height", "width"),
    [(375, 500), (500, 375), (427, 640), (300, 257), (999, 1000), (224, 224), (150, 200)],
)
def test_resizing_only_up_to_the_crop_gives_the_whole_resize_bits(height: int, width: int) -> None:
    """resize_crop_into computes the resize only up to the crop's far edges; each pixel it
    keeps must be the whole resize's, downscaling, upscaling or neither."""
    resize_step = ResizeStep(op="resize", size=256, method="bilinear")
    crop = CenterCropStep(op="center_crop", size=[224, 224])
    rng = np.random.default_rng(height * width)
    # Texture at every frequency, where a shifted grid or a cut filter window would show.
    image = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    whole = center_crop(resize_fast([image], resize_step), crop)[0].transpose(2, 0, 1)
    out = np.zeros((3, 224, 224), dtype=np.uint8)
    resize_crop_into(out, image, resize_step, crop)
    assert np.array_equal(out, whole)


def test_the_fused_fast_path_skips_a_bad_file_and_keeps_the_rows_in_order(
    tmp_path: Path,
) -> None:
    spec = benchstack_spec("fast")
    photos = photo_samples()
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"\xff\xd8 not a jpeg")
    mixed = [photos[0], Sample(id="bad.jpg", path=bad, label=None), photos[1]]
    got, kept, errors = preprocess_batch(mixed, spec, stored=True)
    alone, _, _ = preprocess_batch(photos, spec, stored=True)
    assert got is not None and got.dtype == np.uint8
    assert [s.id for s in kept] == [photos[0].id, photos[1].id]
    assert [e.sample_id for e in errors] == ["bad.jpg"]
    assert np.array_equal(got, alone)


def test_fast_mode_changes_no_prediction_of_the_trained_digits_model(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch", reason="torch not installed")
    from services.core.manifest import load_manifest
    from services.digits import dataset as digits
    from services.inference.backends.torch.architectures import DigitsCNN

    artifacts = digits.prepare(tmp_path / "digits", epochs=6)
    as_jpeg = tmp_path / "jpeg"
    for png in artifacts.test_dir.rglob("*.png"):
        target = as_jpeg / png.parent.name / f"{png.stem}.jpg"
        target.parent.mkdir(parents=True, exist_ok=True)
        Image.open(png).save(target, "JPEG", quality=90)
    model = DigitsCNN()
    model.load_state_dict(torch.load(artifacts.weights))
    model.eval()
    spec = load_manifest(artifacts.manifest).inputs[0]
    samples, _ = scan_folder(as_jpeg)
    predictions = {}
    for fidelity in ("reference", "fast"):
        prepared = preprocess(samples, spec.model_copy(update={"fidelity": fidelity}))
        with torch.inference_mode():
            predictions[fidelity] = model(torch.from_numpy(prepared.tensors)).argmax(1).numpy()
        assert not prepared.errors
    assert len(predictions["fast"]) == len(samples) > 300
    assert np.array_equal(predictions["fast"], predictions["reference"])


def test_the_lookup_normalize_of_8_bit_pixels_is_bit_identical_to_the_float_one() -> None:
    pixels = np.random.default_rng(0).integers(0, 256, (2, 9, 7, 3), dtype=np.uint8)
    step = NormalizeStep(op="normalize", mean=MEAN, std=STD)
    assert np.array_equal(normalize(pixels, step), normalize(pixels.astype(np.float32), step))


def test_normalize_and_nchw_layout_in_one_pass_give_the_two_steps_bits() -> None:
    pixels = np.random.default_rng(1).integers(0, 256, (2, 9, 7, 3), dtype=np.uint8)
    step = NormalizeStep(op="normalize", mean=MEAN, std=STD)
    two_steps = layout(normalize(pixels, step), LayoutStep(op="layout", order="NCHW"))
    fused = normalize_to_nchw(pixels, step)
    assert fused.shape == (2, 3, 9, 7) and fused.flags.c_contiguous
    assert np.array_equal(fused, two_steps)
    # Float input takes the two steps' own path.
    assert np.array_equal(normalize_to_nchw(pixels.astype(np.float32), step), two_steps)


def _jpeg(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 90)).save(buffer, "JPEG")
    return buffer.getvalue()


def test_fast_decode_scales_down_only_to_halves_and_keeps_the_pixel_budget() -> None:
    decode = DecodeStep(op="decode")
    resize = ResizeStep(op="resize", size=256)
    big = decode_one(
        _jpeg(2048, 1536), decode, name="big", max_pixels=10**8, resize=resize, fast=True
    )
    assert big.shape[0] >= 256 and big.shape[0] < 1536  # decoded at a reduced scale
    photo = decode_one(
        _jpeg(500, 375), decode, name="photo", max_pixels=10**8, resize=resize, fast=True
    )
    assert photo.shape == (375, 500, 3)  # under twice the target: full size
    with pytest.raises(DecodeError, match="over the budget"):
        decode_one(_jpeg(500, 375), decode, name="photo", max_pixels=1000, fast=True)


def _textured_jpeg(width: int, height: int, *, subsampling: int, progressive: bool) -> bytes:
    """Smooth colour gradients with noise and sharp-edged blocks: chroma edges, where
    libjpeg-turbo's plain chroma upsampling was up to 119 levels off the smooth one."""
    rng = np.random.default_rng(width * 7 + height)
    ys, xs = np.mgrid[0:height, 0:width]
    pixels = np.stack([xs * 255 // width, ys * 255 // height, (xs + ys) % 256], axis=-1)
    pixels[(xs // 37 + ys // 23) % 5 == 0] = (250, 10, 10)
    noisy = pixels + rng.integers(-8, 9, pixels.shape)
    buffer = io.BytesIO()
    Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)).save(
        buffer, "JPEG", quality=90, subsampling=subsampling, progressive=progressive
    )
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("width", "height", "subsampling", "progressive", "color_mode", "scale"),
    [
        (500, 375, 2, False, "RGB", 1),  # 4:2:0, the common camera/web form
        (500, 375, 0, False, "RGB", 1),  # 4:4:4, as scikit-learn's photos
        (375, 500, 1, True, "RGB", 1),  # 4:2:2, progressive, portrait
        (500, 375, 2, False, "BGR", 1),
        (500, 375, 2, False, "L", 1),
        (1600, 1100, 2, False, "RGB", 2),  # at least twice twice the target: 1/2 scale
        (3200, 2100, 0, True, "RGB", 4),
    ],
)
def test_fast_decode_gives_the_reference_decodes_pixels(
    width: int, height: int, subsampling: int, progressive: bool, color_mode: str, scale: int
) -> None:
    """The fast mode decodes with libjpeg-turbo's accurate IDCT and smooth chroma
    upsampling, at the 1/N scale Pillow's draft picks for the reference: the same pixels,
    so the modes differ only in the resize (torch's 8-bit kernel vs Pillow's)."""
    data = _textured_jpeg(width, height, subsampling=subsampling, progressive=progressive)
    decode = DecodeStep(op="decode", color_mode=color_mode)
    resize = ResizeStep(op="resize", size=256)
    kwargs = {"name": "textured.jpg", "max_pixels": 10**8, "resize": resize}
    fast = decode_one(data, decode, fast=True, **kwargs)  # type: ignore[arg-type]
    reference = decode_one(data, decode, **kwargs)  # type: ignore[arg-type]
    assert (
        fast.shape == reference.shape == (-(-height // scale), -(-width // scale), len(color_mode))
    )
    assert np.array_equal(fast, reference)
    target_h, target_w = resize.target_size(height, width)
    if scale > 1:  # never reduced below twice the target
        assert fast.shape[0] >= 2 * target_h and fast.shape[1] >= 2 * target_w


def test_fast_mode_decodes_other_formats_as_the_reference_does() -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (5, 4), (1, 2, 3)).save(buffer, "PNG")
    decode = DecodeStep(op="decode")
    fast = decode_one(buffer.getvalue(), decode, name="png", max_pixels=100, fast=True)
    assert np.array_equal(fast, decode_one(buffer.getvalue(), decode, name="png", max_pixels=100))


def test_without_torch_the_fast_mode_resizes_with_pillow_to_the_reference_bits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A machine with ONNX Runtime or TensorFlow only: the fast mode still runs (its
    decode is the reference's, and Pillow resizes), so its tensors are the reference's."""
    reference, _, _ = preprocess_batch(photo_samples(), benchstack_spec("reference"))
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    fast, _, _ = preprocess_batch(photo_samples(), benchstack_spec("fast"), stored=True)
    assert fast is not None and reference is not None
    assert fast.dtype == reference.dtype and np.array_equal(fast, reference)
