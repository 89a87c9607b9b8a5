"""Ranking layers honestly: slowest first, and tied where the data cannot tell them apart."""

from __future__ import annotations

import math
from typing import Any


def median_standard_error_ms(iqr_ms: float, count: int) -> float:
    """The standard error of a median of ``count`` values whose IQR is ``iqr_ms``: the
    normal approximation, 1.2533 sigma / sqrt(n), with sigma = IQR / 1.349."""
    return 1.2533 * (iqr_ms / 1.349) / math.sqrt(max(count, 1))


def ranked(
    rows: list[dict[str, Any]], iterations: int, model_order: dict[str, int]
) -> list[dict[str, Any]]:
    """Rows slowest first, with ties where the data cannot tell two layers apart.

    Sorted by median, a layer is tied with the one above it when their medians differ by
    less than twice the standard error of the difference (each median's from its IQR over
    ``iterations``). A tied group shares a rank (``rank``, ``tied``) and keeps the model's
    order inside it: identical layers (resnet18's three 512-channel convolutions) no longer
    swap places from run to run on noise.
    """
    by_median = sorted(rows, key=lambda r: (r["median_ms"], r["mean_ms"]), reverse=True)
    groups: list[list[dict[str, Any]]] = []
    for row in by_median:
        if groups:
            above = groups[-1][-1]
            error = math.hypot(
                median_standard_error_ms(above["iqr_ms"], iterations),
                median_standard_error_ms(row["iqr_ms"], iterations),
            )
            if above["median_ms"] - row["median_ms"] < 2 * error:
                groups[-1].append(row)
                continue
        groups.append([row])
    result: list[dict[str, Any]] = []
    for group in groups:
        rank = len(result) + 1
        group.sort(key=lambda r: model_order.get(r["name"], 0))
        for row in group:
            result.append(row | {"rank": rank, "tied": len(group) > 1})
    return result
