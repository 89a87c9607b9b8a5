"""Token length distributions of prompts and outputs: fixed, uniform or normal, drawn from
a seeded generator, each bounded, with errors that name the field and what is accepted.

Written as a person types them: ``128``, ``uniform:64:256`` (both ends included),
``normal:128:32`` (mean and standard deviation, rounded and clipped to the field's range).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

Kind = Literal["fixed", "uniform", "normal"]
KINDS: tuple[Kind, ...] = ("fixed", "uniform", "normal")
# What a prompt and an output may be (LoadGen needs 2 output tokens: its TPOT divides by n-1).
INPUT_RANGE = (1, 32_768)
OUTPUT_RANGE = (2, 16_384)
FORMS = "N, uniform:LOW:HIGH or normal:MEAN:STD"


@dataclass(frozen=True)
class LengthSpec:
    kind: Kind
    first: float
    second: float = 0.0

    def describe(self) -> str:
        if self.kind == "fixed":
            return str(int(self.first))
        return f"{self.kind}:{self.first:g}:{self.second:g}"

    def draw(self, count: int, rng: np.random.Generator, bounds: tuple[int, int]) -> list[int]:
        low, high = bounds
        if self.kind == "fixed":
            values = np.full(count, self.first)
        elif self.kind == "uniform":
            values = rng.integers(int(self.first), int(self.second), size=count, endpoint=True)
        else:
            values = np.rint(rng.normal(self.first, self.second, size=count))
        return [int(v) for v in np.clip(values, low, high)]


def parse_length(field: str, text: str, bounds: tuple[int, int]) -> LengthSpec:
    """``text`` as a LengthSpec whose values lie in ``bounds``; a ValueError naming ``field``."""
    low, high = bounds
    kind, _, rest = text.strip().partition(":")
    try:
        if not rest:
            spec = LengthSpec("fixed", int(kind))
        else:
            first, _, second = rest.partition(":")
            if kind not in ("uniform", "normal") or not second:
                raise ValueError
            spec = LengthSpec(kind, float(first), float(second))  # type: ignore[arg-type]
    except ValueError:
        raise ValueError(f"{field}: {text!r} is not a length; accepted: {FORMS}") from None
    inside = [spec.first] if spec.kind != "uniform" else [spec.first, spec.second]
    if any(not low <= value <= high for value in inside):
        raise ValueError(f"{field}: {text!r} lies outside the accepted range {low}..{high}")
    if spec.kind == "uniform" and spec.first > spec.second:
        raise ValueError(f"{field}: {text!r} has its low end above its high end")
    if spec.kind == "normal" and not 0 <= spec.second <= high:
        raise ValueError(f"{field}: {text!r} needs a standard deviation in 0..{high}")
    return spec
