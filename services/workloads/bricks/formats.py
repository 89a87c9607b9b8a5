"""The brick formats a suite holds, each measured apart under its own system key.

A brick's "framework" (its description's ``"framework"``, the signature space, the
frameworks ``bricks run`` measures, the system key of its results) names its *format*:
"torch" (an fx module or a torch.export program, called in torch) or "onnx" (an ONNX
graph, called in an onnxruntime session). Stored descriptions and results say "onnx", so
the format keeps that name; what runs it is ``runtime``, a backend's name
(services/inference/backends/<runtime>), and the system key names the runtime with its
version ("onnxruntime1.20"). What differs between formats is declared here; the bricks'
readers ask this table instead of comparing names.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from services.workloads.bricks.fx_brick import SUFFIX as TORCHFX


@dataclass(frozen=True)
class BrickFormat:
    name: str
    runtime: str  # the backend that runs its bricks
    suffixes: tuple[str, ...]  # its brick files, the one read first first
    # "module:function" in this package, imported when called (onnxruntime only then):
    # (threads) -> the empty brick whose latency is the floor of this format's bricks;
    # (threads) -> the system key's "<runtime><version>-cpu-t<threads>".
    empty_brick: str
    system: str
    # Whether a system's cold-weights construction figure (memory.measure_memory_read,
    # torch modules' weights) is measured before its bricks.
    cold_weights: bool
    # Whether a whole model whose bricks are of this format is measured as `benchstack
    # bench` measures it (`bricks construct --measure`, `calibrate`); else in the bricks'
    # own harness, as its bricks are (`bench` runs an ONNX model only from a manifest).
    whole_through_bench: bool

    def call(self, entry: str, *args: Any) -> Any:
        module_name, function = entry.split(":")
        module = importlib.import_module(f"{__package__}.{module_name}")
        return getattr(module, function)(*args)


FORMATS = {
    "torch": BrickFormat(
        name="torch",
        runtime="torch",
        # .torchfx, or .pt2 where torchfx cannot hold it (or from an older suite).
        suffixes=(TORCHFX, ".pt2"),
        empty_brick="measure:empty_torch_brick",
        system="measure:torch_system",
        cold_weights=True,
        whole_through_bench=True,
    ),
    "onnx": BrickFormat(
        name="onnx",
        runtime="onnxruntime",
        suffixes=(".onnx",),
        empty_brick="measure_onnx:empty_onnx_brick",
        system="measure_onnx:onnxruntime_system",
        cold_weights=False,
        whole_through_bench=False,
    ),
}


def brick_format(name: str) -> BrickFormat:
    found = FORMATS.get(name)
    if found is None:
        raise ValueError(f"framework: {name!r}; accepted: {', '.join(FORMATS)}")
    return found
