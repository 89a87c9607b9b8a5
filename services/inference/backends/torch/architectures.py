"""Builtin PyTorch architectures, built with seeded random weights (nothing is downloaded)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from services.core.architectures import architecture_problem
from services.inference.backend_interface import BackendError


class DigitsCNN(nn.Module):
    """A small CNN for 8x8 grey digits (scikit-learn's bundled dataset), upscaled to 32x32."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(32 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, num_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


_BENCHSTACK: dict[str, Callable[[], nn.Module]] = {"digits_cnn": DigitsCNN}


def build_architecture(spec: str, seed: int = 0) -> nn.Module:
    """``spec`` is 'torchvision:<name>' or 'benchstack:<name>'."""
    # The same check, and message, as `benchstack manifest validate`.
    problem = architecture_problem(spec, "torch")
    if problem is not None:
        raise BackendError(problem)
    zoo, _, name = spec.partition(":")
    torch.manual_seed(seed)
    if zoo == "torchvision":
        import torchvision

        return torchvision.models.get_model(name, weights=None)
    return _BENCHSTACK[name]()
