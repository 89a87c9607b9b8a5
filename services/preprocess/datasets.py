"""Datasets: a folder of images (flat, or one sub-folder per class) or seeded synthetic JPEGs."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from services.preprocess.sample_files import total_problem
from shared.settings import Settings, get_settings

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff"}
# Sizes typical of photo datasets (ImageNet's most common is 500x375).
SYNTHETIC_SIZES = ((500, 375), (375, 500), (500, 333), (640, 480), (500, 500))
SYNTHETIC_CLASSES = 10


class DatasetError(ValueError):
    """The dataset cannot be used; the message says why and what is accepted."""


class OutOfMemory(DatasetError):
    """Preparing the samples needed more memory than the process may use; the message
    says how much it had (shared/memory_limit.error_text)."""


@dataclass(frozen=True)
class Sample:
    id: str  # stable: the path relative to the dataset root
    path: Path
    label: int | None
    # The resolved folder the file must resolve inside when read (sample_files.real_path);
    # None: not checked (samples a benchmark builds from its own files).
    within: Path | None = None


@dataclass(frozen=True)
class SampleError:
    """Why one sample could not be prepared; the others go on."""

    sample_id: str
    message: str

    def __str__(self) -> str:
        return f"{self.sample_id}: {self.message}"


@dataclass(frozen=True)
class Dataset:
    name: str
    root: Path
    samples: list[Sample]
    class_names: list[str]


# Side of the square of Gaussian noise each synthetic image takes its noise from, at an
# offset of its own: larger than every SYNTHETIC_SIZES image.
NOISE_TILE = 1024


def _noise_tile(rng: np.random.Generator) -> np.ndarray:
    """Gaussian noise, sigma 12 levels, for _synthetic_image to take windows of. Drawn
    once per dataset: drawing it per image was 4.2 of the 5.5 ms an image took."""
    return rng.standard_normal((NOISE_TILE, NOISE_TILE, 3), dtype=np.float32) * np.float32(12)


def _synthetic_image(rng: np.random.Generator, width: int, height: int, noise: np.ndarray) -> bytes:
    """Smooth gradients plus a window of ``noise`` at a random offset: compresses like a
    photo (about 3.2 bits per pixel at quality 90), unlike pure noise. In float32
    throughout: 11.8 ms per image before, with float64 noise drawn per image."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    channels = []
    for _ in range(3):
        fx, fy, phase = rng.uniform(0.005, 0.05), rng.uniform(0.005, 0.05), rng.uniform(0, 6.3)
        channels.append(127 + 100 * np.sin(fx * x + fy * y + phase))
    image = np.stack(channels, axis=-1)
    top = int(rng.integers(NOISE_TILE - height + 1))
    left = int(rng.integers(NOISE_TILE - width + 1))
    image += noise[top : top + height, left : left + width]
    np.clip(image, 0, 255, out=image)
    buffer = io.BytesIO()
    Image.fromarray(image.astype(np.uint8)).save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def make_synthetic(root: Path, count: int, seed: int) -> Path:
    """Write ``count`` seeded JPEGs in class folders under root; reuse them if already there.

    Built in a private folder and renamed into place, so processes preparing the same
    dataset at once never read a half-written one.
    """
    # "v2": images drawn by the current _synthetic_image; a folder an earlier version
    # drew under the same seed holds other pixels, so it is not reused.
    folder = root / f"synthetic-v2-s{seed}-n{count}"
    if folder.exists():
        return folder
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=root))
    try:
        rng = np.random.default_rng(seed)
        noise = _noise_tile(rng)
        for index in range(count):
            width, height = SYNTHETIC_SIZES[int(rng.integers(len(SYNTHETIC_SIZES)))]
            label = int(rng.integers(SYNTHETIC_CLASSES))
            path = staging / f"class_{label}" / f"img_{index:06d}.jpg"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(_synthetic_image(rng, width, height, noise))
        staging.rename(folder)
    except OSError:
        # Another process renamed its identical copy into place first.
        if not folder.exists():
            raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return folder


def _image_files(root: Path) -> Iterator[Path]:
    """The image files under ``root``, following no link to a folder: the walk never
    leaves the folder (a link to "/" walked the whole filesystem). A link to a file is
    listed; reading it checks where it leads (sample_files.real_path). A folder that
    cannot be read is left out, as before."""
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as scan:
                entries = list(scan)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                pending.append(Path(entry.path))
            elif os.path.splitext(entry.name)[1].lower() in IMAGE_SUFFIXES and entry.is_file():
                yield Path(entry.path)


def scan_folder(root: Path, within: Path | None = None) -> tuple[list[Sample], list[str]]:
    """The samples under ``root``, each to be read inside ``within`` (by default the
    folder itself, resolved)."""
    within = within or root.resolve()
    files = sorted(_image_files(root))
    class_dirs = sorted({p.parent.name for p in files if p.parent != root})
    labelled = bool(class_dirs) and all(p.parent != root for p in files)
    class_index = {name: i for i, name in enumerate(class_dirs)}
    samples = [
        Sample(
            id=str(p.relative_to(root)),
            path=p,
            label=class_index[p.parent.name] if labelled else None,
            within=within,
        )
        for p in files
    ]
    return samples, class_dirs if labelled else []


def dataset_folder(spec: str, datasets_dir: Path) -> tuple[Path, Path]:
    """(the folder ``spec`` names, resolved; the folder its files must resolve inside).

    A folder named inside ``datasets_dir`` (every API submission's) must resolve inside it
    too, and so must its files: a link there to /usr/share is refused. Any other folder
    (the CLI's, named by the host's own user) confines its files to itself."""
    folder = Path(spec).expanduser()
    try:
        real = folder.resolve(strict=True)
    except (OSError, RuntimeError):
        real = None
    if real is None or not real.is_dir():
        raise DatasetError(
            f"dataset: {spec!r} is not a folder; accepted: 'synthetic' or a folder of images"
        )
    shared = Path(datasets_dir).expanduser().absolute()
    if not folder.absolute().is_relative_to(shared):
        return real, real
    within = shared.resolve()
    if not real.is_relative_to(within):
        raise DatasetError(
            f"dataset: {spec!r} leads outside the datasets folder (through a link); "
            "accepted: a folder inside it"
        )
    return real, within


def resolve_dataset(
    spec: str, *, count: int | None, seed: int, cache_dir: Path, settings: Settings | None = None
) -> Dataset:
    """``spec`` is 'synthetic' or a folder; ``count`` keeps the first N samples (sorted by id).

    Refused (DatasetError) when the files those samples read hold more than
    ``max_dataset_bytes`` together (sample_files.total_problem)."""
    settings = settings or get_settings()
    if spec == "synthetic":
        root = make_synthetic(cache_dir / "datasets", count or 64, seed).resolve()
        within = root
        name = f"synthetic(seed={seed},n={count or 64})"
    else:
        root, within = dataset_folder(spec, settings.datasets_dir)
        name = str(root)
    samples, class_names = scan_folder(root, within)
    if not samples:
        raise DatasetError(
            f"dataset: no images in {root} (looked for {', '.join(sorted(IMAGE_SUFFIXES))})"
        )
    if count is not None:
        if count < 1:
            raise DatasetError("samples: must be at least 1")
        samples = samples[:count]
    problem = total_problem(samples, settings.max_sample_bytes, settings.max_dataset_bytes)
    if problem is not None:
        raise DatasetError(problem)
    return Dataset(name=name, root=root, samples=samples, class_names=class_names)
