"""The TensorRT backend's registration (NVIDIA GPUs only)."""

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


class TensorRTOptions(BackendOptionsModel):
    precision: Choice[Literal["fp32", "fp16"]] = "fp32"
    max_batch_size: int = Field(64, ge=1, le=4096)  # the optimisation profile's bounds
    opt_batch_size: int = Field(8, ge=1, le=4096)
    workspace_mb: int = Field(1024, ge=1, le=1 << 20)
    opset: int = Field(17, ge=MIN_ONNX_OPSET, le=MAX_ONNX_OPSET)


CONFIG = BackendSpec(
    name="tensorrt",
    summary="TensorRT engines built from ONNX, on an NVIDIA GPU",
    entry="backend:TensorRTBackend",
    options=TensorRTOptions,
    probe_module="tensorrt",
    distributions=("tensorrt", "tensorrt-cu12", "tensorrt-cu13"),
    devices=("cuda",),
)
