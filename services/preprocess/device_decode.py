"""The fast mode's fused path with its JPEGs decoded where the model runs: on a CUDA
device by nvJPEG, through torchvision.io.decode_jpeg (a list of files is one batched
nvJPEG call), then resized (antialiased bilinear), center-cropped and rounded to planar
8-bit rows on that device, so only the crops cross to the host. What the CPU's fused
path (batch.py) stores, made on the GPU: the same stored form, the same ``finish``.

Chosen with the run's device (``decode_device``): a CUDA run in the fast mode decodes on
its GPU when torchvision can; every other run decodes on the CPU. The same code runs on
the CPU device (torchvision's libjpeg-turbo), which is how the tests check it where no
GPU is. nvJPEG's IDCT and chroma upsampling are not libjpeg-turbo's, and it decodes whole
images (no DCT scaling), so its crops differ from the CPU path's by a few levels:
benchmarks/preprocess_throughput.py --device prints by how much, and the images/s of
both paths on the same host. A shard made here is stored under its own key (the decoder
is in it), never mistaken for the CPU's.

Bounds, before any pixel is decoded: each file's size is read from its header and
checked against the per-image pixel budget and the output bounds, as on the CPU, and
files go to the device in groups of at most ``MAX_GROUP_PIXELS`` decoded pixels, so
the device memory a batch takes is bounded whatever the files are. A file that is not a
JPEG, a JPEG in other colours than YCbCr or grey (CMYK, YCCK, RGB), or one that the device
cannot decode (nvJPEG lacks some progressive and arithmetic-coded forms) is decoded on
the CPU as the CPU path decodes it, and its pixels moved to the device; only a file the
CPU cannot decode either is an error, with the CPU's reason.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from services.core.manifest_checks import shape_mismatch
from services.core.manifest_sections import CenterCropStep, DecodeStep, Input, ResizeStep
from services.preprocess.batch import (
    Budget,
    finish,
    planar_steps,
    read_sample,
    torch_importable,
)
from services.preprocess.datasets import Sample, SampleError
from services.preprocess.decode import (
    JPEG_MAGIC,
    DecodeError,
    check_full_size,
    decode_one,
    jpeg_header,
)
from services.preprocess.ops import crop_box
from services.preprocess.sizes import OutputBounds
from shared.devices import DeviceError, parse_device
from shared.memory_limit import error_text
from shared.settings import get_settings

if TYPE_CHECKING:
    import torch

# Decoded pixels (height x width) sent to the device in one nvJPEG call: 64 MP is 192 MB
# of RGB, plus one image at a time in float32 for its resize.
MAX_GROUP_PIXELS = 64_000_000
# Pixel values (N x C x H x W) resized in one call: 16 M is 64 MB in float32, and as much
# again for the resized copy.
MAX_RESIZE_VALUES = 16_000_000
DECODER_NAME = "nvjpeg"  # what a run's report and a shard's key say decoded on a GPU
# JPEG colour spaces (simplejpeg's names) that go to the device; others decode on the CPU.
DEVICE_COLORSPACES = frozenset({"YCbCr", "Gray"})


def decode_device(spec: Input, run_device: str) -> str | None:
    """The device that decodes ``spec``'s JPEGs for a run on ``run_device``: that device
    when it is a CUDA one, the mode is fast with the fused steps, and torchvision can
    decode there; None (the CPU path) otherwise."""
    try:
        device = parse_device(run_device)
    except DeviceError:
        return None
    if device.kind != "cuda" or spec.fidelity != "fast" or planar_steps(spec) is None:
        return None
    return str(device) if unavailable_reason(str(device)) is None else None


def decoder_label(decoding_device: str | None) -> str:
    """What a run's report says decoded its JPEGs: "cpu", or "nvjpeg (cuda:0)"."""
    return f"{DECODER_NAME} ({decoding_device})" if decoding_device else "cpu"


def unavailable_reason(device: str) -> str | None:
    """Why torchvision cannot decode JPEGs on ``device`` here; None when it can."""
    if not torch_importable():
        return "torch is not installed"
    try:
        import torchvision.io  # noqa: F401
    except ImportError:
        return "torchvision is not installed (pip install -e '.[torch]')"
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        return f"torch {torch.__version__} sees no CUDA device"
    return None


@dataclass(frozen=True)
class _Checked:
    """One sample's bytes, read and size-checked; ``jpeg``: whether it goes to the
    device's decoder (a JPEG in YCbCr or grey)."""

    sample: Sample
    data: bytes
    pixels: int
    jpeg: bool


def prepare_on_device(
    samples: Sequence[Sample],
    spec: Input,
    *,
    device: str,
    max_image_pixels: int | None = None,
    stored: bool = False,
    rows: np.ndarray | None = None,
) -> tuple[np.ndarray | None, list[Sample], list[SampleError]]:
    """One batch through the fused steps on ``device``: (tensors, the samples kept, the
    errors per file), as batch.preprocess_batch returns them. ``stored``: the planar
    8-bit crops a shard keeps; otherwise finished (normalized) tensors. ``rows``: where
    the crops go when they fit it (the result is then a view of it)."""
    import torch

    steps = planar_steps(spec)
    if steps is None or spec.fidelity != "fast":
        raise ValueError(
            "input.fidelity: decoding on a device takes the fast mode's steps (decode, "
            "bilinear resize, center_crop, normalize, NCHW layout)"
        )
    resize, crop, _ = steps
    settings = get_settings()
    budget = Budget(max_image_pixels or settings.max_image_pixels, OutputBounds.of(spec, settings))
    decode = spec.steps[0]
    assert isinstance(decode, DecodeStep)  # Input's validator: an image's first step
    errors: list[SampleError] = []
    checked = [c for c in (_read_checked(s, budget, errors) for s in samples) if c is not None]
    kept: list[Sample] = []
    crops: list[torch.Tensor] = []
    with torch.inference_mode():
        for group in _groups(checked, MAX_GROUP_PIXELS):
            decoded = _decoded(group, decode, budget, device, errors)
            images = [image for _, image in decoded]
            crops.extend(_resized_crops(images, resize, crop, together=device != "cpu"))
            kept.extend(item.sample for item, _ in decoded)
        if not crops:
            return None, kept, errors
        planar = torch.stack(crops).cpu().numpy()
    if planar.shape[1:] != tuple(spec.shape):
        raise ValueError(shape_mismatch(0, planar.shape[1:], tuple(spec.shape)))
    if rows is not None and rows.shape[1:] == planar.shape[1:] and rows.dtype == np.uint8:
        rows[: len(planar)] = planar
        planar = rows[: len(planar)]
    return (planar if stored else finish(planar, spec)), kept, errors


def _read_checked(sample: Sample, budget: Budget, errors: list[SampleError]) -> _Checked | None:
    """The sample's bytes and size, or None with its error recorded: unreadable, a
    damaged JPEG header, or an image over the budget or the output bounds."""
    try:
        data = read_sample(sample)
        if data[:2] != JPEG_MAGIC:
            # Not a JPEG: Pillow decodes it on the CPU, checking its size as it does for
            # any. Its size is not read here, so it counts as the largest the budget allows.
            return _Checked(sample, data, budget.max_pixels, jpeg=False)
        height, width, colorspace = jpeg_header(data, sample.id)
        check_full_size(sample.id, width, height, budget.max_pixels, budget.outputs)
    except DecodeError as exc:
        errors.append(SampleError(sample.id, exc.reason))
        return None
    return _Checked(sample, data, width * height, jpeg=colorspace in DEVICE_COLORSPACES)


def _groups(checked: Sequence[_Checked], most_pixels: int) -> Iterator[list[_Checked]]:
    """``checked`` in order, in groups of at most ``most_pixels`` decoded pixels (an image
    over it alone is a group of one; the per-image budget bounds that)."""
    group: list[_Checked] = []
    pixels = 0
    for item in checked:
        if group and pixels + item.pixels > most_pixels:
            yield group
            group, pixels = [], 0
        group.append(item)
        pixels += item.pixels
    if group:
        yield group


def _decoded(
    group: Sequence[_Checked],
    decode: DecodeStep,
    budget: Budget,
    device: str,
    errors: list[SampleError],
) -> list[tuple[_Checked, torch.Tensor]]:
    """Each decodable item of ``group`` with its (C, H, W) uint8 pixels on ``device``, in
    order; the others' errors recorded. The device's JPEGs go in one call; when it fails
    (nvJPEG returns no partial results) each is decoded alone, and one the device cannot
    decode is decoded on the CPU, whose reason names the file if it cannot either."""
    on_device = [index for index, item in enumerate(group) if item.jpeg]
    images: dict[int, torch.Tensor] = {}  # by position in ``group``
    try:
        decoded = _decode_jpegs([group[index] for index in on_device], decode, device)
        images.update(zip(on_device, decoded, strict=True))
    except RuntimeError:
        for index in on_device:
            with contextlib.suppress(RuntimeError):  # then the CPU's turn, below
                images[index] = _decode_jpegs([group[index]], decode, device)[0]
    out = []
    for index, item in enumerate(group):
        if index not in images:
            try:
                images[index] = _decoded_on_host(item, decode, budget, device)
            except DecodeError as exc:
                errors.append(SampleError(item.sample.id, exc.reason))
                continue
        out.append((item, images[index]))
    return out


def _decode_jpegs(items: Sequence[_Checked], decode: DecodeStep, device: str) -> list[torch.Tensor]:
    import torch
    from torchvision.io import ImageReadMode, decode_jpeg

    if not items:
        return []
    mode = ImageReadMode.GRAY if decode.color_mode == "L" else ImageReadMode.RGB
    data = [torch.frombuffer(bytearray(item.data), dtype=torch.uint8) for item in items]
    with warnings.catch_warnings():
        # torchvision 0.29 marks its decoders deprecated for TorchCodec's; they still
        # are the documented way to nvJPEG's batched decode from torch.
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            images = decode_jpeg(data, mode=mode, device=device)
        except (ValueError, MemoryError) as exc:
            raise RuntimeError(error_text(exc, "decoding the image")) from exc
    return [image.flip(0) if decode.color_mode == "BGR" else image for image in images]


def _decoded_on_host(
    item: _Checked, decode: DecodeStep, budget: Budget, device: str
) -> torch.Tensor:
    import torch

    array = decode_one(
        item.data,
        decode,
        name=item.sample.id,
        max_pixels=budget.max_pixels,
        fast=True,  # a JPEG as the CPU path decodes it; anything else through Pillow
        bounds=budget.outputs,
    )
    # Pillow's arrays are read-only, which torch will not wrap: copied only then.
    writable = np.require(array, requirements=["C", "W"])
    return torch.from_numpy(writable).permute(2, 0, 1).contiguous().to(device)


def _resized_crops(
    images: Sequence[torch.Tensor],
    resize: ResizeStep,
    crop: CenterCropStep,
    *,
    together: bool = True,
) -> list[torch.Tensor]:
    """``_resized_crop`` of each image, in order. With ``together``, images of one size
    are resized in one call (one kernel launch for many, which is what a GPU needs), in
    batches of at most ``MAX_RESIZE_VALUES`` pixel values, so the float32 copies stay
    bounded. Without, one at a time: what a CPU wants, where one image's floats stay in
    cache and a batch's do not (here, 500x375 photos: 367 img/s one at a time, 247
    together)."""
    import torch

    out: list[torch.Tensor | None] = [None] * len(images)
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for index, image in enumerate(images):
        by_shape.setdefault(tuple(image.shape), []).append(index)
    for shape, indices in by_shape.items():
        per_batch = max(1, MAX_RESIZE_VALUES // math.prod(shape)) if together else 1
        for start in range(0, len(indices), per_batch):
            chosen = indices[start : start + per_batch]
            batch = torch.stack([images[index] for index in chosen])
            for index, cropped in zip(chosen, _resized_crop(batch, resize, crop), strict=True):
                out[index] = cropped
    done = [cropped for cropped in out if cropped is not None]
    assert len(done) == len(images)  # every index is in exactly one shape's list
    return done


def _resized_crop(images: torch.Tensor, resize: ResizeStep, crop: CenterCropStep) -> torch.Tensor:
    """(N, C, crop H, crop W) uint8: (N, C, H, W) ``images`` of one size resized as the
    fast mode resizes (bilinear, antialiased as Pillow's), center-cropped, and rounded to
    8 bits as torch's 8-bit kernel rounds. In float32: CUDA has no 8-bit antialiased
    kernel."""
    import torch

    height, width = images.shape[2:]
    new_h, new_w = resize.target_size(height, width)
    top, left, crop_h, crop_w = crop_box(new_h, new_w, crop)
    if (new_h, new_w) == (height, width):
        return images[:, :, top : top + crop_h, left : left + crop_w]
    resized = torch.nn.functional.interpolate(
        images.float(),
        size=(new_h, new_w),
        mode="bilinear",
        antialias=True,
        align_corners=False,
    )[:, :, top : top + crop_h, left : left + crop_w]
    return resized.round_().clamp_(0, 255).to(torch.uint8)
