"""The PyTorch backend's registration."""

from __future__ import annotations

from typing import Literal

from services.inference.backends.spec import BackendOptionsModel, BackendSpec, Choice, ZooSpec


class TorchOptions(BackendOptionsModel):
    mode: Choice[Literal["eager", "torchscript", "compile"]] = "eager"


CONFIG = BackendSpec(
    name="torch",
    summary="PyTorch eager, TorchScript or torch.compile, CPU or CUDA",
    entry="backend:TorchBackend",
    options=TorchOptions,
    probe_module="torch",
    distributions=("torch",),
    related_packages=("torchvision",),
    devices=("cpu", "cuda"),
    aliases=("pytorch",),
    profilers={"FRAMEWORK": "profilers:framework", "LIBRARY": "profilers:library"},
    roofline="profilers:roofline_inputs",
    runtime_info="runtime:runtime_info",
    onnx_export="onnx_export:export_onnx",
    architecture_models="torch.nn.Module",  # services/inference/backends/convert.py
    zoos={
        "torchvision": ZooSpec("torchvision", "zoos:torchvision_names"),
        "benchstack": ZooSpec("torch", "zoos:benchstack_names"),
    },
)
