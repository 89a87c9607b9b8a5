"""Bounds on what a user passes to `benchstack train`: a clear error naming the option."""

from __future__ import annotations

BOUNDS: dict[str, tuple[int, int]] = {
    "--steps": (1, 100_000),
    "--batch-size": (1, 4096),
    "--warmup": (0, 10_000),
    "--image-size": (8, 1024),
}
PRECISIONS = ("fp32", "bf16")
OPTIMIZERS = ("sgd", "adam")
FRAMEWORKS = ("torch", "tensorflow")


def check_bounded(option: str, value: int) -> int:
    low, high = BOUNDS[option]
    if not low <= value <= high:
        raise ValueError(f"{option}: {value} is outside the accepted range {low}..{high}")
    return value


def check_choice(option: str, value: str, accepted: tuple[str, ...]) -> str:
    if value not in accepted:
        raise ValueError(f"{option}: {value!r} is not accepted; use one of {', '.join(accepted)}")
    return value
