"""A profiled run's operators and kernels, as ``benchstack profile`` prints them.

The rows are the stored profile's (``profiling/analysis.library_ops`` and
``profiling/layer_ops``, computed once in the worker from the LIBRARY pass): the page
shows the CLI's aggregation, never one of its own. Runs stored before calls, totals,
IQRs and shares were kept have nulls there.
"""

from __future__ import annotations

from typing import Any

import strawberry


def _number(row: dict[str, Any], key: str) -> float | None:
    value = row.get(key)
    return None if value is None else float(value)


@strawberry.type(name="Operator")
class OperatorType:
    name: str
    # "library" (a framework operator, e.g. aten::conv2d) or "gpu" (a kernel or a copy).
    kind: str
    # Per iteration of the LIBRARY pass.
    calls: float | None
    # Summed over the pass's iterations.
    total_ms: float | None
    # Time per iteration: the median over iterations and its interquartile range.
    median_ms: float
    iqr_ms: float | None
    # The median's share of the pass's model time (nested operators count their children).
    percent: float | None

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> OperatorType:
        return cls(
            name=str(row["name"]),
            kind=str(row.get("kind", "library")),
            calls=_number(row, "calls"),
            total_ms=_number(row, "total_ms"),
            median_ms=float(row.get("median_ms", row.get("mean_ms", 0.0))),
            iqr_ms=_number(row, "iqr_ms"),
            percent=_number(row, "percent"),
        )


@strawberry.type(name="LayerOperators")
class LayerOperatorsType:
    layer: str
    ops: list[OperatorType]

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> LayerOperatorsType:
        return cls(layer=str(row["layer"]), ops=[OperatorType.from_dict(op) for op in row["ops"]])


@strawberry.type(name="Operators")
class OperatorsType:
    # The slowest operators and kernels (each kind its own top rows).
    operators: list[OperatorType]
    # The slowest layers' own operators and kernels, in the layer table's order.
    per_layer: list[LayerOperatorsType]
    # Which pass the per-layer rows come from (LIBRARY, or ONNX Runtime's nodes by scope).
    per_layer_source: str
    iterations: int | None

    @classmethod
    def from_profile(cls, profile: dict[str, Any] | None) -> OperatorsType | None:
        if not profile:
            return None
        return cls(
            operators=[OperatorType.from_dict(r) for r in profile.get("library_ops") or []],
            per_layer=[LayerOperatorsType.from_dict(r) for r in profile.get("layer_ops") or []],
            per_layer_source=str(profile.get("layer_ops_source") or ""),
            iterations=profile.get("iterations"),
        )
