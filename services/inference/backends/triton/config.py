"""The KServe-V2 client backend's registration (Triton, MLServer, KServe)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from services.inference.backends.spec import BackendOptionsModel, BackendSpec, Choice, PlainText


class TritonOptions(BackendOptionsModel):
    protocol: Choice[Literal["http", "grpc"]] = "http"
    model_name: PlainText | None = None  # default: the manifest's name
    model_version: PlainText = ""  # "": the server's choice
    input_name: PlainText | None = None  # default: the manifest's inputs[0].layer_name
    output_name: PlainText | None = None
    # auto = false for MLServer (it cannot read binary tensors), else true
    binary_data: bool | Choice[Literal["auto"]] = "auto"
    concurrency: int = Field(8, ge=1, le=1024)  # requests in flight for predict_async
    timeout_s: float = Field(60.0, gt=0.0, le=3600.0)


CONFIG = BackendSpec(
    name="triton",
    summary="a KServe-V2 server (Triton, MLServer, KServe) over HTTP or gRPC",
    entry="backend:TritonBackend",
    options=TritonOptions,
    probe_module="tritonclient",
    distributions=("tritonclient",),
    devices=("cpu", "cuda"),  # the server's device; the client runs anywhere
    asynchronous=True,
    # Which server a worker talks to is its BENCHSTACK_TRITON_URL, never the submitter's,
    # or any user could make a worker connect to any host.
    refused_options={"url": "the worker's BENCHSTACK_TRITON_URL decides which server it talks to"},
    deployment_options={"url": "triton_url"},
)
