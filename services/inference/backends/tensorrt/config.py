"""The TensorRT backend's registration (NVIDIA GPUs only)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from services.inference.backends.spec import BackendOptionsModel, BackendSpec, Choice

MAX_OPSET = 30  # above every opset released so far


class TensorRTOptions(BackendOptionsModel):
    precision: Choice[Literal["fp32", "fp16"]] = "fp32"
    max_batch_size: int = Field(64, ge=1, le=4096)  # the optimisation profile's bounds
    opt_batch_size: int = Field(8, ge=1, le=4096)
    workspace_mb: int = Field(1024, ge=1, le=1 << 20)
    opset: int = Field(17, ge=7, le=MAX_OPSET)


CONFIG = BackendSpec(
    name="tensorrt",
    summary="TensorRT engines built from ONNX, on an NVIDIA GPU",
    entry="backend:TensorRTBackend",
    options=TensorRTOptions,
    probe_module="tensorrt",
    distributions=("tensorrt", "tensorrt-cu12", "tensorrt-cu13"),
    devices=("cuda",),
)
