"""Bounds on what a user passes to `benchstack train`: a clear error naming the option."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

BOUNDS: dict[str, tuple[int, int]] = {
    "--steps": (1, 100_000),
    "--batch-size": (1, 4096),
    "--warmup": (0, 10_000),
    "--image-size": (8, 1024),
    "--display-every": (0, 100_000),
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


class TrainingOptions(BaseModel):
    """A training evaluation submitted to the stack (``submitEvaluation(training: ...)``):
    `benchstack train`'s settings, bounded as the CLI bounds them. The batch size is the
    evaluation's; the data are synthetic tensors (no folder crosses the API)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    steps: int = Field(default=20, ge=BOUNDS["--steps"][0], le=BOUNDS["--steps"][1])
    warmup: int = Field(default=3, ge=BOUNDS["--warmup"][0], le=BOUNDS["--warmup"][1])
    image_size: int = Field(default=224, ge=BOUNDS["--image-size"][0], le=BOUNDS["--image-size"][1])
    precision: Literal["fp32", "bf16"] = "fp32"
    optimizer: Literal["sgd", "adam"] = "sgd"
