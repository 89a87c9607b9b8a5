"""The ONNX Runtime backend's registration."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from services.inference.backends.spec import (
    MAX_ONNX_OPSET,
    MIN_ONNX_OPSET,
    BackendOptionsModel,
    BackendSpec,
    Choice,
)


class OnnxRuntimeOptions(BackendOptionsModel):
    graph_optimization_level: Choice[Literal["disable", "basic", "extended", "all"]] = "all"
    execution_mode: Choice[Literal["sequential", "parallel"]] = "sequential"
    execution_provider: Choice[Literal["auto", "cuda", "tensorrt"]] = "auto"
    opset: int = Field(17, ge=MIN_ONNX_OPSET, le=MAX_ONNX_OPSET)


CONFIG = BackendSpec(
    name="onnxruntime",
    summary="ONNX Runtime: CPU, or the CUDA / TensorRT execution providers",
    entry="backend:OnnxRuntimeBackend",
    options=OnnxRuntimeOptions,
    probe_module="onnxruntime",
    distributions=("onnxruntime", "onnxruntime-gpu"),
    related_packages=("onnx",),
    devices=("cpu", "cuda"),
    aliases=("ort",),
    profilers={"FRAMEWORK": "profilers:framework"},
    profiler_gaps={
        "LIBRARY": "ONNX Runtime's CPU execution provider reports no calls below its nodes "
        "(per-node kernel time is its deepest level)"
    },
    runtime_info="runtime:runtime_info",
    file_format="onnx",  # a model converted to ONNX runs here (backends/convert.py)
)
