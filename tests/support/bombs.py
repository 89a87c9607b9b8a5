"""Image bombs: tiny files that decode or resize to gigabytes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def write_bombs(folder: Path) -> None:
    """A 1x60,000 and a 60,000x1 PNG (196 bytes each: ~12 GB once resized with the aspect
    kept) and a 30,000 x 30,000 one-bit PNG (900 megapixels, about 100 KB on disk), as a
    one-class image folder."""
    labelled = folder / "class0"
    labelled.mkdir(parents=True)
    for width, height in [(1, 60_000), (60_000, 1)]:
        Image.fromarray(np.zeros((height, width, 3), np.uint8)).save(labelled / f"{width}.png")
    Image.new("1", (30_000, 30_000)).save(labelled / "huge.png")
