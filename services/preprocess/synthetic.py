"""Synthetic datasets: seeded photo-like JPEGs, made once into a cache of their own.

Each (seed, count) is a folder under ``<data_dir>/synthetic`` named by the digest of the
seed, the count and GENERATOR (content-addressed: the same three always draw the same
pixels), never in the shared datasets folder (there they were permanent, 857 MB for
10,000 samples, and pushed real folders out of the datasets listing). The cache is kept
under ``synthetic_cache_mb`` by evicting the least recently used folders (each use
touches its folder's mtime) once a new one is made.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

# Sizes typical of photo datasets (ImageNet's most common is 500x375).
SYNTHETIC_SIZES = ((500, 375), (375, 500), (500, 333), (640, 480), (500, 500))
SYNTHETIC_CLASSES = 10
# The images _synthetic_image draws: bump when it draws other pixels for the same seed,
# so a folder an earlier version drew is not reused.
GENERATOR = "v2"
# A folder's bytes, written into it before it is renamed into place: eviction reads this
# instead of walking up to 100,000 files.
SIZE_FILE = ".bytes"
# A folder used this recently is never evicted: a worker that resolved it a moment ago
# may be reading it (one past this is made again, the same pixels, if still needed).
IN_USE_SECONDS = 600.0

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


def synthetic_key(seed: int, count: int) -> str:
    """The folder name of (seed, count) as GENERATOR draws them."""
    text = f"synthetic\0{GENERATOR}\0seed={seed}\0count={count}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def make_synthetic(root: Path, count: int, seed: int, max_bytes: int | None = None) -> Path:
    """``count`` seeded JPEGs in class folders in the cache ``root``, made unless there.

    Built in a private folder and renamed into place, so processes preparing the same
    dataset at once never read a half-written one. ``max_bytes``: once a folder is made,
    the least recently used others are evicted until the cache holds at most this much
    (None: no eviction)."""
    folder = root / synthetic_key(seed, count)
    if folder.is_dir():
        _touch(folder)
        return folder
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=root))
    try:
        size = _draw(staging, count, seed)
        (staging / SIZE_FILE).write_text(str(size))
        staging.rename(folder)
    except OSError:
        # Another process renamed its identical copy into place first.
        if not folder.is_dir():
            raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    if max_bytes is not None:
        evict(root, max_bytes, keep=folder)
    return folder


def _draw(folder: Path, count: int, seed: int) -> int:
    """Write the images into ``folder``; their bytes."""
    rng = np.random.default_rng(seed)
    noise = _noise_tile(rng)
    total = 0
    for index in range(count):
        width, height = SYNTHETIC_SIZES[int(rng.integers(len(SYNTHETIC_SIZES)))]
        label = int(rng.integers(SYNTHETIC_CLASSES))
        path = folder / f"class_{label}" / f"img_{index:06d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = _synthetic_image(rng, width, height, noise)
        path.write_bytes(data)
        total += len(data)
    return total


def _touch(folder: Path) -> None:
    """Mark the folder used now (its mtime is its last use)."""
    with contextlib.suppress(OSError):  # evicted meanwhile: the caller makes it again
        os.utime(folder)


def _size(folder: Path) -> int:
    try:
        return int((folder / SIZE_FILE).read_text())
    except (OSError, ValueError):  # made before SIZE_FILE was written: walk it once
        return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def evict(root: Path, max_bytes: int, keep: Path | None = None) -> list[str]:
    """Remove the least recently used folders of the cache ``root`` until it holds at most
    ``max_bytes``, sparing ``keep`` and any folder used in the last IN_USE_SECONDS; the
    names removed. A folder is renamed away first, so no reader sees it half removed."""
    now = time.time()
    folders = []
    for entry in os.scandir(root):
        if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
            continue
        with contextlib.suppress(OSError):
            folders.append((entry.stat(follow_symlinks=False).st_mtime, entry.name))
    sizes = {name: _size(root / name) for _, name in folders}
    total = sum(sizes.values())
    removed: list[str] = []
    for used, name in sorted(folders):
        if total <= max_bytes:
            break
        if (keep is not None and name == keep.name) or now - used < IN_USE_SECONDS:
            continue
        doomed = root / f".evicted-{name}-{os.getpid()}"
        try:
            (root / name).rename(doomed)
        except OSError:
            continue  # another process evicted it first
        shutil.rmtree(doomed, ignore_errors=True)
        total -= sizes[name]
        removed.append(name)
    return removed
