"""GraphQL types of a profiled run's roofline (``profiling.roofline`` stores it in the
run's profile): the measured peaks and each layer placed against them."""

from __future__ import annotations

from typing import Any

import strawberry


@strawberry.type(name="RooflinePeaks")
class RooflinePeaksType:
    """This machine's roofs, measured with the run (a GEMM and a copy probe)."""

    device: str
    threads: int
    gflops: float
    gbps: float
    # The probes' spread over their repeats (interquartile range).
    gflops_iqr: float
    gbps_iqr: float
    method: str


@strawberry.type(name="RooflinePoint")
class RooflinePointType:
    name: str
    type: str
    own: bool
    # Floats: GraphQL's Int stops at 2**31.
    flops: float
    # True where FLOPs are one per output element (no product or convolution counted).
    flops_estimated: bool
    bytes: float
    intensity: float
    median_ms: float
    gflops: float
    gbps: float
    roof_gflops: float
    of_roof: float | None
    bound: str


@strawberry.type(name="Roofline")
class RooflineType:
    peaks: RooflinePeaksType
    ridge_flops_per_byte: float | None
    points: list[RooflinePointType]
    # Layers of the table that could not be placed (no work counted, or no time).
    unplaced: list[str]
    method: str

    @classmethod
    def from_dict(cls, stored: dict[str, Any] | None) -> RooflineType | None:
        if not stored:
            return None
        peaks = stored["peaks"]
        return cls(
            peaks=RooflinePeaksType(
                device=str(peaks["device"]),
                threads=int(peaks["threads"]),
                gflops=float(peaks["gflops"]),
                gbps=float(peaks["gbps"]),
                gflops_iqr=float(peaks.get("gflops_iqr", 0.0)),
                gbps_iqr=float(peaks.get("gbps_iqr", 0.0)),
                method=str(peaks.get("method", "")),
            ),
            ridge_flops_per_byte=stored.get("ridge_flops_per_byte"),
            points=[_point(p) for p in stored.get("layers", [])],
            unplaced=[str(name) for name in stored.get("unplaced", [])],
            method=str(stored.get("method", "")),
        )


def _point(stored: dict[str, Any]) -> RooflinePointType:
    of_roof = stored.get("of_roof")
    return RooflinePointType(
        name=str(stored["name"]),
        type=str(stored.get("type", "")),
        own=bool(stored.get("own", False)),
        flops=float(stored["flops"]),
        flops_estimated=stored.get("flops_source") != "counted",
        bytes=float(stored["bytes"]),
        intensity=float(stored["intensity"]),
        median_ms=float(stored["median_ms"]),
        gflops=float(stored["gflops"]),
        gbps=float(stored["gbps"]),
        roof_gflops=float(stored["roof_gflops"]),
        of_roof=None if of_roof is None else float(of_roof),
        bound=str(stored["bound"]),
    )
