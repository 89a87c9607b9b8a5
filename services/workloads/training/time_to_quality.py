"""Time to quality: train the digits CNN until held-out top-1 reaches a target (MLPerf-style).

Each run is seeded; its wall time covers training and the per-epoch evaluations. A run that
has not reached the target after ``max_epochs`` is reported as not reaching it. The olympic
score drops the fastest and the slowest run and averages the rest (MLPerf training rules);
it needs at least three runs, all reaching the target.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class QualityRun:
    seed: int
    reached: bool
    epochs: int
    top1: float
    wall_s: float


def olympic_score(seconds: list[float]) -> float:
    if len(seconds) < 3:
        raise ValueError("--runs: the olympic score needs at least 3 runs reaching the target")
    ordered = sorted(seconds)[1:-1]
    return sum(ordered) / len(ordered)


def digits_split(seed: int = 0, test_fraction: float = 0.2) -> tuple[np.ndarray, ...]:
    """scikit-learn digits as 1x32x32 floats in 0..1, like the digits manifest; split."""
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    small = torch.from_numpy((digits.images / 16.0).astype(np.float32)).unsqueeze(1)
    images = torch.nn.functional.interpolate(small, size=(32, 32), mode="bilinear").numpy()
    x_train, x_test, y_train, y_test = train_test_split(
        images, digits.target, test_size=test_fraction, random_state=seed, stratify=digits.target
    )
    return x_train, x_test, y_train.astype(np.int64), y_test.astype(np.int64)


def train_to_target(target_top1: float, seed: int, max_epochs: int) -> QualityRun:
    import torch
    from torch import nn

    from services.inference.backends.torch.architectures import build_architecture

    x_train, x_test, y_train, y_test = (torch.from_numpy(a) for a in digits_split())
    start = time.perf_counter()
    torch.manual_seed(seed)
    model = build_architecture("benchstack:digits_cnn", seed=seed)
    optimiser = torch.optim.Adam(model.parameters(), lr=2e-3)
    loss_fn = nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(seed)
    top1 = 0.0
    for epoch in range(1, max_epochs + 1):
        model.train()
        for batch in torch.randperm(len(x_train), generator=generator).split(64):
            optimiser.zero_grad()
            loss_fn(model(x_train[batch]), y_train[batch]).backward()
            optimiser.step()
        model.eval()
        with torch.no_grad():
            top1 = float((model(x_test).argmax(1) == y_test).float().mean())
        if top1 >= target_top1:
            return QualityRun(seed, True, epoch, top1, time.perf_counter() - start)
    return QualityRun(seed, False, max_epochs, top1, time.perf_counter() - start)
