"""scikit-learn's digits as labelled PNG files, and the digits CNN trained on them.

``prepare(output)`` writes, under ``output``:

- ``data/train/<digit>/*.png`` and ``data/test/<digit>/*.png``: 8x8 grey images, a seeded
  80/20 split of the 1797 digits (pixel values 0..16 scaled to 0..255);
- ``digits_cnn.pt``: a state dict, trained on the train split's files *as benchstack's
  preprocessing reads them*, so training and benchmarking see identical tensors;
- ``labels.txt`` and ``digits_cnn.yaml``: the shipped manifest template with
  ``source.weights`` (path and sha256) filled in and the held-out top-1 as attribute.

Training is seeded and deterministic on one machine (one thread, deterministic kernels);
a few seconds on a CPU core.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from PIL import Image

from services.core.catalogue import CATALOGUE_DIR
from services.core.manifest import ModelManifest, load_manifest, sha256_of
from services.preprocess.datasets import scan_folder
from services.preprocess.pipeline import preprocess
from shared.bounded_yaml import YamlLimits, load_bounded

TEMPLATE_DIR = CATALOGUE_DIR / "digits"
TEMPLATE = TEMPLATE_DIR / "digits_cnn.yaml"
LABELS = TEMPLATE_DIR / "labels.txt"
WEIGHTS_FILE = "digits_cnn.pt"
MANIFEST_FILE = "digits_cnn.yaml"


@dataclass(frozen=True)
class DigitsArtifacts:
    root: Path
    train_dir: Path
    test_dir: Path
    weights: Path
    manifest: Path
    sha256: str
    test_top1: float  # percent, on the test split, measured after training


def write_images(output: Path, *, seed: int = 0, test_fraction: float = 0.2) -> tuple[Path, Path]:
    """The digits as PNG files in one folder per class; returns (train_dir, test_dir)."""
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction: {test_fraction} must lie strictly between 0 and 1")
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = np.rint(digits.images * (255.0 / 16.0)).astype(np.uint8)
    order = np.random.default_rng(seed).permutation(len(images))
    test_count = round(len(images) * test_fraction)
    splits = {"test": order[:test_count], "train": order[test_count:]}
    for split, indices in splits.items():
        folder = output / "data" / split
        if folder.exists():
            shutil.rmtree(folder)  # never mix files from an earlier split
        for index in indices:
            path = folder / str(int(digits.target[index])) / f"digit_{int(index):04d}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(images[index], mode="L").save(path)
    return output / "data" / "train", output / "data" / "test"


def load_split(folder: Path, manifest: ModelManifest) -> tuple[np.ndarray, np.ndarray]:
    """Tensors exactly as benchstack prepares them, and class indices from the folders."""
    samples, class_names = scan_folder(folder)
    prepared = preprocess(samples, manifest.inputs[0])
    if prepared.errors:
        raise ValueError(f"dataset: unreadable files in {folder}: {prepared.errors[:3]}")
    # Folder names are the digits themselves; map through them, not the sorted position.
    targets = np.asarray([int(class_names[lab]) for lab in prepared.labels if lab is not None])
    return prepared.tensors, targets


def train(tensors: np.ndarray, targets: np.ndarray, *, seed: int = 0, epochs: int = 12) -> Any:
    """The digits CNN, trained with Adam; returns the torch module in eval mode."""
    import torch
    from torch import nn

    from services.inference.backends.torch.architectures import build_architecture

    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    # One thread and deterministic kernels: the same bytes on every run on this machine.
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    try:
        model = build_architecture("benchstack:digits_cnn", seed=seed)
        generator = torch.Generator().manual_seed(seed)
        x = torch.from_numpy(tensors)
        y = torch.from_numpy(targets.astype(np.int64))
        optimiser = torch.optim.Adam(model.parameters(), lr=2e-3)
        loss_fn = nn.CrossEntropyLoss()
        model.train()
        for _ in range(epochs):
            for batch in torch.randperm(len(x), generator=generator).split(64):
                optimiser.zero_grad()
                loss_fn(model(x[batch]), y[batch]).backward()
                optimiser.step()
        return model.eval()
    finally:
        torch.use_deterministic_algorithms(deterministic)
        torch.set_num_threads(threads)


def top1(model: Any, tensors: np.ndarray, targets: np.ndarray) -> float:
    import torch

    with torch.inference_mode():
        predicted = model(torch.from_numpy(tensors)).argmax(dim=1).numpy()
    return 100.0 * float((predicted == targets).mean())


def prepare(output: Path, *, seed: int = 0, epochs: int = 12) -> DigitsArtifacts:
    """Write images, train, save weights and the sha256-filled manifest under ``output``."""
    import torch

    output = output.expanduser().resolve()
    output.mkdir(parents=True, exist_ok=True)
    template = load_manifest(TEMPLATE)
    train_dir, test_dir = write_images(output, seed=seed)
    model = train(*load_split(train_dir, template), seed=seed, epochs=epochs)
    test_top1 = top1(model, *load_split(test_dir, template))
    weights = output / WEIGHTS_FILE
    torch.save(model.state_dict(), weights)
    digest = sha256_of(weights)
    shutil.copyfile(LABELS, output / "labels.txt")
    # Through the bounded loader, as every YAML the system reads (no duplicate keys).
    data = load_bounded(TEMPLATE.read_text(), YamlLimits())
    data["source"]["weights"] = {"path": WEIGHTS_FILE, "sha256": digest}
    data["attributes"]["top1"] = round(test_top1, 3)
    data["attributes"]["training_dataset"] = (
        f"scikit-learn digits, data/train ({seed=}, {epochs} epochs); top1 on data/test"
    )
    manifest_path = output / MANIFEST_FILE
    manifest_path.write_text(
        "# Written by `benchstack digits prepare`; the sha256 pins the weights below.\n"
        + yaml.safe_dump(data, sort_keys=False)
    )
    load_manifest(manifest_path)  # what we wrote must load, or fail here rather than later
    return DigitsArtifacts(
        root=output,
        train_dir=train_dir,
        test_dir=test_dir,
        weights=weights,
        manifest=manifest_path,
        sha256=digest,
        test_top1=test_top1,
    )
