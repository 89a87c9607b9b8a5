"""Decoding one sample's bytes into HWC uint8 pixels: the per-file step of preprocessing,
where a damaged or oversized image becomes a DecodeError naming its file. The batch
steps that follow are services/preprocess/ops.py.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageFile, UnidentifiedImageError

from services.core.manifest_sections import DecodeStep, ResizeStep
from services.preprocess.ops import PIL_RESAMPLE, resize_fast
from services.preprocess.sizes import OutputBounds
from shared.memory_limit import error_text

# An image is decoded at a reduced JPEG scale only while that keeps at least this many
# times the resize target on each side, so the final resample still does the smoothing and
# the result stays within a pixel level or two of a full decode.
DRAFT_MARGIN = 2
JPEG_MAGIC = b"\xff\xd8"
PIXEL_BUDGET_SETTING = "BENCHSTACK_MAX_IMAGE_PIXELS"
# What an error with no text of its own says was being done.
DECODING = "decoding the image"
# Start-of-frame markers of arithmetic-coded JPEGs, which may spend under a bit per block.
_ARITHMETIC_SOF = (b"\xff\xc9", b"\xff\xca", b"\xff\xcb", b"\xff\xcd", b"\xff\xce", b"\xff\xcf")


class DecodeError(ValueError):
    """One sample's bytes are not a readable image, or too large to decode."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"{name}: {reason}")


def _megapixels(pixels: int) -> str:
    return f"{pixels / 1e6:.1f} megapixels"


def _draft_size(image: Image.Image, resize: ResizeStep | None) -> tuple[int, int] | None:
    """(width, height) to ask JPEG draft decoding for, or None to decode at full size."""
    if resize is None or image.format != "JPEG":
        return None
    width, height = image.size
    target_h, target_w = resize.target_size(height, width)
    return target_w * DRAFT_MARGIN, target_h * DRAFT_MARGIN


def decode_one(
    data: bytes,
    step: DecodeStep,
    *,
    name: str,
    max_pixels: int,
    resize: ResizeStep | None = None,
    fast: bool = False,
    resize_now: bool = False,
    bounds: OutputBounds | None = None,
) -> np.ndarray:
    """Decode one image; ``name`` (its file) is what errors say.

    The size is read from the header and checked against ``max_pixels``, and against
    ``bounds`` (what the steps after decode will make of it), before any pixel is
    decoded. ``fast`` decodes JPEGs with libjpeg-turbo through simplejpeg
    (``_decode_jpeg_fast``: Pillow's pixels, without its per-image overhead); everything
    else goes through Pillow as torchvision's pipeline does. With ``resize_now``, Pillow
    applies ``resize`` to the image it decoded (the same operation as the resize step,
    without two copies through an array).
    """
    if fast and data[:2] == JPEG_MAGIC:
        array = _decode_jpeg_fast(
            data, step, name=name, max_pixels=max_pixels, resize=resize, bounds=bounds
        )
        return resize_fast([array], resize)[0] if resize_now and resize else array
    return _decode_with_pillow(
        data,
        step,
        name=name,
        max_pixels=max_pixels,
        resize=resize,
        resize_now=resize_now,
        bounds=bounds,
    )


def jpeg_header(data: bytes, name: str) -> tuple[int, int, str]:
    """(height, width, colour space as simplejpeg names it) from a JPEG's header, no
    pixel decoded; DecodeError naming ``name`` when the header cannot be read."""
    import simplejpeg

    try:
        height, width, colorspace, _ = simplejpeg.decode_jpeg_header(data)
    except ValueError as exc:
        raise DecodeError(name, f"cannot decode image: {error_text(exc, DECODING)}") from exc
    check_jpeg_body(name, data, width, height)
    return height, width, colorspace


def check_jpeg_body(name: str, data: bytes, width: int, height: int) -> None:
    """DecodeError when a JPEG's file is too short for the size its header claims.

    libjpeg pads a scan that ends early with grey and only warns, which Pillow does not
    surface: a 3 KB file whose header says 7000 x 7000 decoded to 49 megapixels of grey,
    counted as a valid sample. Every Huffman-coded JPEG (baseline or progressive) codes
    each 8 x 8 block of its full-size component in at least one bit (a DC code is never
    shorter), so a file under one bit per block cannot hold the image. Arithmetic-coded
    ones are left to the decoder."""
    blocks = -(-width // 8) * -(-height // 8)
    if len(data) * 8 >= blocks or any(marker in data for marker in _ARITHMETIC_SOF):
        return
    raise DecodeError(
        name,
        f"truncated image: its header says {width}x{height} pixels, which takes at least "
        f"{-(-blocks // 8):,} bytes of JPEG data; the file has {len(data):,}",
    )


def check_full_size(
    name: str, width: int, height: int, max_pixels: int, bounds: OutputBounds | None
) -> None:
    """DecodeError when an image of ``width`` x ``height`` (from its header) may not be
    decoded whole: over the per-image pixel budget, or making outputs over ``bounds``."""
    _check_bounds(name, bounds, width, height)
    _over_budget(name, (width, height), (width, height), max_pixels)


def _check_bounds(name: str, bounds: OutputBounds | None, width: int, height: int) -> None:
    problem = bounds.problem(width, height) if bounds is not None else None
    if problem is not None:
        raise DecodeError(name, problem)


def _over_budget(name: str, full: tuple[int, int], scaled: tuple[int, int], budget: int) -> None:
    width, height = scaled
    if width * height <= budget:
        return
    note = "" if scaled == full else f", {width}x{height} at reduced scale"
    raise DecodeError(
        name,
        f"image of {full[0]}x{full[1]} pixels{note} ({_megapixels(width * height)}) is over "
        f"the budget of {_megapixels(budget)} per image; accepted: smaller images, or a "
        f"larger {PIXEL_BUDGET_SETTING}",
    )


def dct_denominator(full_h: int, full_w: int, resize: ResizeStep | None) -> int:
    """N of the 1/N scale (8, 4, 2 or 1) to decode a JPEG at before ``resize``: Pillow's
    draft rule for a draft of DRAFT_MARGIN times the target (the largest N that leaves
    the image at least that large), which the reference mode uses, so both modes decode
    the same pixels. libjpeg-turbo's IDCT has SIMD code for these scales only. Decoding
    down to the target itself, as this mode once did, filters as a 4x4 IDCT does, not as
    an antialiased resize: it moved the logits of a batch-norm-calibrated random model
    (benchmarks/preprocess_throughput.py) by up to 1.17 on a 512x600 photo, against 0.02
    at most over six real photos with this rule."""
    if resize is None:
        return 1
    target_h, target_w = resize.target_size(full_h, full_w)
    ratio = min(full_w // (target_w * DRAFT_MARGIN), full_h // (target_h * DRAFT_MARGIN))
    return next((denominator for denominator in (8, 4, 2) if ratio >= denominator), 1)


def _decode_jpeg_fast(
    data: bytes,
    step: DecodeStep,
    *,
    name: str,
    max_pixels: int,
    resize: ResizeStep | None,
    bounds: OutputBounds | None = None,
) -> np.ndarray:
    import simplejpeg

    full_h, full_w, _ = jpeg_header(data, name)
    _check_bounds(name, bounds, full_w, full_h)
    denominator = dct_denominator(full_h, full_w, resize)
    scaled_h, scaled_w = -(-full_h // denominator), -(-full_w // denominator)
    _over_budget(name, (full_w, full_h), (scaled_w, scaled_h), max_pixels)
    colorspace = {"RGB": "RGB", "BGR": "BGR", "L": "GRAY"}[step.color_mode]
    try:
        # libjpeg-turbo's accurate IDCT and smooth chroma upsampling, as Pillow decodes:
        # the same pixels, for 3 to 10 % more time than its fast settings, which put
        # chroma edges up to 119 levels off (photo-like 4:2:0 JPEG). The smallest scale
        # at least scaled_h x scaled_w is 1/denominator itself.
        array = simplejpeg.decode_jpeg(
            data,
            colorspace=colorspace,
            fastdct=False,
            fastupsample=False,
            min_height=scaled_h,
            min_width=scaled_w,
        )
    except (ValueError, MemoryError) as exc:
        raise DecodeError(name, f"cannot decode image: {error_text(exc, DECODING)}") from exc
    _over_budget(name, (full_w, full_h), (array.shape[1], array.shape[0]), max_pixels)
    if array.ndim == 2:
        array = array[..., None]
    return np.ascontiguousarray(array)


def _decode_with_pillow(
    data: bytes,
    step: DecodeStep,
    *,
    name: str,
    max_pixels: int,
    resize: ResizeStep | None = None,
    resize_now: bool = False,
    bounds: OutputBounds | None = None,
) -> np.ndarray:
    """Decode one image; ``name`` (its file) is what errors say.

    The size is read from the header and checked against ``max_pixels`` before any pixel
    is decoded. When ``resize`` comes next, a JPEG much larger than its target is decoded
    at 1/2, 1/4 or 1/8 scale (Pillow's draft mode), never below ``DRAFT_MARGIN`` times
    the target, so a folder of huge photos cannot exhaust memory.
    """
    mode = "RGB" if step.color_mode == "BGR" else step.color_mode
    # A library imported beside us may have turned this on; a truncated file must stay an
    # error (convert() below loads every pixel, so Pillow sees the whole file).
    ImageFile.LOAD_TRUNCATED_IMAGES = False
    try:
        with Image.open(io.BytesIO(data)) as image:
            full_w, full_h = image.size
            _check_bounds(name, bounds, full_w, full_h)
            if image.format == "JPEG":
                check_jpeg_body(name, data, full_w, full_h)
            draft = _draft_size(image, resize)
            if draft is not None:
                image.draft(mode, draft)
            width, height = image.size
            if width * height > max_pixels:
                scaled = "" if image.size == (full_w, full_h) else f", {width}x{height} drafted"
                raise DecodeError(
                    name,
                    f"image of {full_w}x{full_h} pixels{scaled} "
                    f"({_megapixels(width * height)}) is over the budget of "
                    f"{_megapixels(max_pixels)} per image; accepted: smaller images, or a "
                    f"larger {PIXEL_BUDGET_SETTING}",
                )
            converted = image.convert(mode)
            if resize_now and resize is not None:
                new_h, new_w = resize.target_size(height, width)
                if (new_h, new_w) != (height, width):
                    converted = converted.resize(
                        (new_w, new_h), resample=PIL_RESAMPLE[resize.method]
                    )
            array = np.asarray(converted)
    except DecodeError:
        raise
    except Image.DecompressionBombError as exc:
        # Pillow's own ceiling, checked as the header is read, above any budget we set.
        raise DecodeError(name, f"refused by Pillow before decoding: {exc}") from exc
    except UnidentifiedImageError as exc:
        # Pillow's message names the in-memory buffer, not the file: say it ourselves.
        raise DecodeError(
            name, "cannot decode image: not a format Pillow recognises (JPEG, PNG, ...)"
        ) from exc
    except Exception as exc:  # PIL raises many types for damaged files
        raise DecodeError(name, f"cannot decode image: {error_text(exc, DECODING)}") from exc
    if step.color_mode == "BGR":
        array = array[..., ::-1]
    if array.ndim == 2:
        array = array[..., None]
    return np.ascontiguousarray(array)
