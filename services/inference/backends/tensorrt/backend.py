"""TensorRT backend: builds an engine from ONNX and runs it on an NVIDIA GPU.

The ONNX file comes from ``services.inference.backends.convert`` (a torch manifest is exported,
an .onnx ``source.file`` is checked and used). Engines are cached under
``<data_dir>/engines``, keyed by the ONNX file's sha256, the TensorRT version, the GPU and
the build settings, because building one takes from seconds to minutes.

TensorRT is imported inside ``load`` so that this module imports on any machine; without
TensorRT or a GPU, ``load`` raises ``BackendUnavailable`` saying which is missing. Device
memory is handled through torch's CUDA allocator (the torch extra is needed).

Options (``BackendOptions.extra``): ``precision`` = fp32 | fp16 (default fp32),
``max_batch_size`` (default 64) and ``opt_batch_size`` (default 8) for the optimisation
profile, ``workspace_mb`` (default 1024), ``opset`` for conversion (default 17).
"""

from __future__ import annotations

import hashlib
import threading
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

import numpy as np

from services.core.manifest import ModelManifest, sha256_of
from services.inference.backend_interface import (
    Backend,
    BackendError,
    BackendUnavailable,
    choice_option,
)
from services.inference.backends.convert import DEFAULT_OPSET, onnx_file_for
from shared.settings import get_settings

PRECISIONS = ("fp32", "fp16")


def _int_option(extra: dict[str, Any], key: str, default: int) -> int:
    try:
        value = int(extra.get(key, default))
    except (TypeError, ValueError):
        value = 0
    if value < 1:
        raise BackendError(
            f"{key}: {extra.get(key)!r} is not accepted; accepted: a positive integer"
        )
    return value


class TensorRTBackend(Backend):
    name = "tensorrt"

    def version(self) -> str:
        try:
            return package_version("tensorrt")
        except PackageNotFoundError as exc:
            raise BackendUnavailable("tensorrt: the Python package is not installed") from exc

    def load(self, manifest: ModelManifest) -> None:
        extra = self.options.extra
        self.precision = choice_option(extra, "precision", PRECISIONS, "fp32")
        self.max_batch = _int_option(extra, "max_batch_size", 64)
        self.opt_batch = min(_int_option(extra, "opt_batch_size", 8), self.max_batch)
        self.workspace_mb = _int_option(extra, "workspace_mb", 1024)
        trt, torch = self._import_runtime()
        self.device = torch.device(self.options.device)

        onnx_path, self.converted_from = onnx_file_for(
            manifest, opset=int(extra.get("opset", DEFAULT_OPSET))
        )
        first = manifest.inputs[0]
        self.input_name, self.output_name = first.layer_name, manifest.outputs[0].layer_name
        logger = trt.Logger(trt.Logger.WARNING)
        plan = self._engine_plan(trt, torch, logger, onnx_path, tuple(first.shape))
        self.engine = trt.Runtime(logger).deserialize_cuda_engine(plan)
        if self.engine is None:
            raise BackendError(
                f"source: TensorRT could not deserialise the engine built from {onnx_path.name}"
            )
        names = [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]
        self.output_names = [
            n for n in names if self.engine.get_tensor_mode(n) == trt.TensorIOMode.OUTPUT
        ]
        for field, wanted in (
            ("inputs[0].layer_name", self.input_name),
            ("outputs[0].layer_name", self.output_name),
        ):
            if wanted not in names:
                raise BackendError(
                    f"{field}: {wanted!r} is not in the engine; accepted: {', '.join(names)}"
                )
        self._torch_dtypes = {
            n: torch.from_numpy(
                np.empty(0, dtype=trt.nptype(self.engine.get_tensor_dtype(n)))
            ).dtype
            for n in names
        }
        self.context = self.engine.create_execution_context()
        self.stream = torch.cuda.Stream(device=self.device)
        self._torch = torch
        # One execution context runs one inference at a time.
        self._lock = threading.Lock()
        self.gpu_name = torch.cuda.get_device_name(self.device)

    def _import_runtime(self) -> tuple[Any, Any]:
        if not self.options.device.startswith("cuda"):
            raise BackendUnavailable(
                f"device: TensorRT runs only on NVIDIA GPUs; got {self.options.device!r}, "
                "accepted: cuda, cuda:<index>"
            )
        try:
            import tensorrt as trt
        except ImportError as exc:
            raise BackendUnavailable(
                "tensorrt: the Python package is not installed "
                "(pip install tensorrt; it needs an NVIDIA driver)"
            ) from exc
        if not hasattr(trt, "Builder"):
            # A stray folder named tensorrt on sys.path imports as an empty namespace package.
            raise BackendUnavailable(
                f"tensorrt: {list(getattr(trt, '__path__', []))} is not the TensorRT package"
            )
        try:
            import torch
        except ImportError as exc:
            raise BackendUnavailable(
                "torch: needed for GPU memory; pip install 'benchstack[torch]'"
            ) from exc
        if not torch.cuda.is_available():
            raise BackendUnavailable("device: no CUDA GPU is visible to this process")
        return trt, torch

    def _engine_plan(
        self, trt: Any, torch: Any, logger: Any, onnx_path: Path, shape: tuple[int, ...]
    ) -> bytes:
        capability = ".".join(map(str, torch.cuda.get_device_capability(self.device)))
        key = hashlib.sha256(
            f"{sha256_of(onnx_path)}|trt={trt.__version__}|{torch.cuda.get_device_name(self.device)}|"
            f"sm={capability}|{self.precision}|{self.opt_batch}|{self.max_batch}|{self.workspace_mb}".encode()
        ).hexdigest()
        cached = get_settings().data_dir / "engines" / f"{key}.plan"
        self.engine_cached = cached.is_file()
        if self.engine_cached:
            return cached.read_bytes()
        plan = self._build(trt, logger, onnx_path, shape)
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(".partial")
        partial.write_bytes(plan)
        partial.replace(cached)  # atomic: a reader never sees half an engine
        return plan

    def _build(self, trt: Any, logger: Any, onnx_path: Path, shape: tuple[int, ...]) -> bytes:
        builder = trt.Builder(logger)
        # Explicit batch is the only mode from TensorRT 10 on; older releases need the flag.
        flag = getattr(trt.NetworkDefinitionCreationFlag, "EXPLICIT_BATCH", None)
        network = builder.create_network(0 if flag is None else 1 << int(flag))
        parser = trt.OnnxParser(network, logger)
        if not parser.parse_from_file(str(onnx_path)):
            errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
            raise BackendError(f"source: TensorRT cannot parse {onnx_path.name}: {errors}")
        config = builder.create_builder_config()
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, self.workspace_mb << 20)
        if self.precision == "fp16":
            # TensorRT 11 removed the weak-typing flags: there an FP16 engine needs an ONNX
            # file whose tensors are already FP16, which this backend does not produce.
            if not hasattr(trt.BuilderFlag, "FP16"):
                raise BackendUnavailable(
                    f"precision: fp16 needs TensorRT < 11 (this is {trt.__version__}, which builds "
                    "strongly typed networks only); use fp32"
                )
            config.set_flag(trt.BuilderFlag.FP16)
        profile = builder.create_optimization_profile()
        profile.set_shape(
            self.input_name, (1, *shape), (self.opt_batch, *shape), (self.max_batch, *shape)
        )
        config.add_optimization_profile(profile)
        plan = builder.build_serialized_network(network, config)
        if plan is None:
            raise BackendError(
                f"source: TensorRT failed to build an engine from {onnx_path.name} (see its log)"
            )
        return bytes(plan)

    def predict(self, batch: np.ndarray) -> np.ndarray:
        if batch.shape[0] > self.max_batch:
            raise BackendError(
                f"max_batch_size: the engine takes at most {self.max_batch}; "
                f"got a batch of {batch.shape[0]}"
            )
        torch = self._torch
        with self._lock, torch.cuda.stream(self.stream):
            tensor = torch.from_numpy(np.ascontiguousarray(batch)).to(
                self.device, self._torch_dtypes[self.input_name]
            )
            self.context.set_input_shape(self.input_name, tuple(tensor.shape))
            self.context.set_tensor_address(self.input_name, tensor.data_ptr())
            # Every output needs an address, even those the benchmark does not read.
            outputs = {}
            for name in self.output_names:
                shape = tuple(self.context.get_tensor_shape(name))
                outputs[name] = torch.empty(
                    shape, dtype=self._torch_dtypes[name], device=self.device
                )
                self.context.set_tensor_address(name, outputs[name].data_ptr())
            if not self.context.execute_async_v3(self.stream.cuda_stream):
                raise BackendError("tensorrt: execute_async_v3 failed (see the TensorRT log)")
            result = outputs[self.output_name].float().cpu()  # waits for the stream
        return np.asarray(result.numpy())

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            **super().describe(),
            "gpu": self.gpu_name,
            "precision": self.precision,
            "opt_batch_size": self.opt_batch,
            "max_batch_size": self.max_batch,
            "workspace_mb": self.workspace_mb,
            "engine_cached": self.engine_cached,
        }
        if self.converted_from:
            info["converted_from"] = self.converted_from
        return info

    def close(self) -> None:
        for attr in ("context", "engine"):
            self.__dict__.pop(attr, None)
