"""benchstack preprocessing vs torchvision's PIL pipeline, side by side, one core.

The images are synthetic but photo-like (smooth gradients, shapes and noise, JPEG quality
90), generated deterministically: no real photos can be downloaded here. Both pipelines
produce Resize(256) + CenterCrop(224) + ToTensor + Normalize (ImageNet mean/std) and are
timed in interleaved rounds so load from other processes falls on both alike.

    PYTHONPATH=$PWD python3 -m benchmarks.preprocess_throughput --images 16 --rounds 3
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw

from services.preprocess.datasets import Sample
from services.preprocess.pipeline import preprocess_batch
from shared.manifest import Input

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
SIZES = {"photo 500x375": (500, 375), "12 MP 4000x3000": (4000, 3000)}


def photo_like_jpeg(width: int, height: int, seed: int) -> bytes:
    """A JPEG with a photo's structure: smooth gradients, a few shapes, sensor-like noise."""
    rng = np.random.default_rng(seed)
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    base = np.stack(
        [
            128 + 100 * np.sin(xs / width * rng.uniform(1, 4) + c) * np.cos(ys / height * 3)
            for c in range(3)
        ],
        axis=-1,
    )
    image = Image.fromarray(np.clip(base, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for _ in range(8):
        x0, y0 = int(rng.integers(0, width)), int(rng.integers(0, height))
        x1, y1 = (
            x0 + int(rng.integers(width // 10, width // 3)),
            y0 + int(rng.integers(height // 10, height // 3)),
        )
        colour = tuple(int(v) for v in rng.integers(0, 256, 3))
        draw.ellipse((x0, y0, x1, y1), fill=colour)
    noisy = np.asarray(image).astype(np.int16) + rng.normal(0, 6, (height, width, 3)).astype(
        np.int16
    )
    buffer = io.BytesIO()
    Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)).save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def benchstack_spec() -> Input:
    return Input.model_validate(
        {
            "shape": (3, 224, 224),
            "steps": [
                {"decode": {}},
                {"resize": {"size": 256}},
                {"center_crop": {"size": 224}},
                {"normalize": {"mean": MEAN, "std": STD}},
                {"layout": {"order": "NCHW"}},
            ],
        }
    )


def torchvision_pipeline() -> Callable[[Path], torch.Tensor]:
    from torchvision import transforms

    transform = transforms.Compose(
        [
            transforms.Resize(256),
            transforms.CenterCrop(224),
            transforms.ToTensor(),
            transforms.Normalize(MEAN, STD),
        ]
    )

    def run(path: Path) -> torch.Tensor:
        with Image.open(path) as image:
            return transform(image.convert("RGB"))

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--images", type=int, default=16, help="images per size")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    args = parser.parse_args()
    torch.set_num_threads(1)
    spec = benchstack_spec()
    tv = torchvision_pipeline()
    with tempfile.TemporaryDirectory() as tmp:
        for label, (width, height) in SIZES.items():
            paths = []
            for i in range(args.images):
                path = Path(tmp) / f"{width}x{height}-{i}.jpg"
                path.write_bytes(photo_like_jpeg(width, height, seed=i))
                paths.append(path)
            samples = [Sample(id=p.name, path=p, label=None) for p in paths]
            totals = {"benchstack": 0.0, "torchvision": 0.0}
            for _ in range(args.rounds):
                start = time.perf_counter()
                preprocess_batch(samples, spec)
                totals["benchstack"] += time.perf_counter() - start
                start = time.perf_counter()
                for path in paths:
                    tv(path)
                totals["torchvision"] += time.perf_counter() - start
            n = args.images * args.rounds
            rates = {name: n / seconds for name, seconds in totals.items()}
            print(
                f"{label}, one core: benchstack {rates['benchstack']:.1f} img/s, "
                f"torchvision {rates['torchvision']:.1f} img/s, "
                f"ratio x{rates['benchstack'] / rates['torchvision']:.2f}"
            )


if __name__ == "__main__":
    main()
