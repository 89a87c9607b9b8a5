"""ONNX Runtime backend: the CPU execution provider, or CUDA / TensorRT on an NVIDIA GPU.

It runs a manifest whose ``source.file`` is an ``.onnx`` file (sha256 checked), or a torch
manifest, which it first exports to ONNX through ``services.inference.backends.convert`` into the
conversion cache (``<data_dir>/converted``).

Options (``BackendOptions.extra``):
  graph_optimization_level  disable | basic | extended | all (default all)
  execution_mode            sequential | parallel (default sequential); inter_op_threads
                            only matters in parallel mode
  execution_provider        auto | cuda | tensorrt (GPU only; auto = cuda)
  opset                     opset for converting torch manifests (default 17)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort

from services.core.manifest import ModelManifest
from services.inference.backend_interface import (
    Backend,
    BackendError,
    BackendUnavailable,
    choice_option,
    parse_device,
)
from services.inference.backends.convert import DEFAULT_OPSET, onnx_file_for

OPTIMIZATION_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}
EXECUTION_MODES = {
    "sequential": ort.ExecutionMode.ORT_SEQUENTIAL,
    "parallel": ort.ExecutionMode.ORT_PARALLEL,
}
GPU_PROVIDERS = {
    "cuda": ["CUDAExecutionProvider"],
    # TensorRT takes the subgraphs it supports; CUDA runs the rest.
    "tensorrt": ["TensorrtExecutionProvider", "CUDAExecutionProvider"],
}


class OnnxRuntimeBackend(Backend):
    name = "onnxruntime"

    def version(self) -> str:
        return str(ort.__version__)

    def load(self, manifest: ModelManifest) -> None:
        extra = self.options.extra
        self.optimization = choice_option(
            extra, "graph_optimization_level", OPTIMIZATION_LEVELS, "all"
        )
        self.execution_mode = choice_option(extra, "execution_mode", EXECUTION_MODES, "sequential")
        self.requested_providers = self._providers()
        opset = int(self.options.extra.get("opset", DEFAULT_OPSET))
        self.model_path, self.converted_from = onnx_file_for(manifest, opset=opset)

        options = ort.SessionOptions()
        options.graph_optimization_level = OPTIMIZATION_LEVELS[self.optimization]
        options.execution_mode = EXECUTION_MODES[self.execution_mode]
        options.intra_op_num_threads = self.options.intra_op_threads
        options.inter_op_num_threads = self.options.inter_op_threads
        try:
            self.session = ort.InferenceSession(
                str(self.model_path), options, providers=self.requested_providers
            )
        except Exception as exc:  # onnxruntime raises its own unrelated exception types
            raise BackendError(
                f"source: onnxruntime cannot load {self.model_path.name}: {exc}"
            ) from exc
        self._check_providers()
        self.input_name = self._io_name(
            "inputs[0].layer_name", manifest.inputs[0].layer_name, self.session.get_inputs()
        )
        self.output_name = self._io_name(
            "outputs[0].layer_name", manifest.outputs[0].layer_name, self.session.get_outputs()
        )

    def _providers(self) -> list[str | tuple[str, dict[str, Any]]]:
        device = self.options.device
        if device == "cpu":
            return ["CPUExecutionProvider"]
        if not device.startswith("cuda"):
            raise BackendError(
                f"device: {device!r} is not accepted; accepted: cpu, cuda, cuda:<index>"
            )
        kind = choice_option(
            self.options.extra, "execution_provider", {"auto": 0, **GPU_PROVIDERS}, "auto"
        )
        wanted = GPU_PROVIDERS["cuda" if kind == "auto" else kind]
        available = ort.get_available_providers()
        missing = [p for p in wanted if p not in available]
        if missing:
            raise BackendUnavailable(
                f"device: {device!r} needs {', '.join(missing)}, which this onnxruntime build "
                f"lacks (it has {', '.join(available)}); install onnxruntime-gpu"
            )
        device_options = {"device_id": parse_device(device)[1]}
        # CPU stays last so nodes no GPU provider implements still run, as ONNX Runtime intends.
        return [*((p, device_options) for p in wanted), "CPUExecutionProvider"]

    def _check_providers(self) -> None:
        # ONNX Runtime silently falls back to CPU when the CUDA libraries do not load;
        # a benchmark labelled "cuda" that ran on the CPU would be a false number.
        active = self.session.get_providers()
        first = self.requested_providers[0]
        wanted = first if isinstance(first, str) else first[0]
        if wanted not in active:
            raise BackendUnavailable(
                f"device: {wanted} did not start (active: {', '.join(active)}); "
                "check the CUDA/cuDNN/TensorRT libraries onnxruntime-gpu needs"
            )

    @staticmethod
    def _io_name(field: str, wanted: str, nodes: list[Any]) -> str:
        names = [n.name for n in nodes]
        if wanted not in names:
            raise BackendError(
                f"{field}: {wanted!r} is not in the model; accepted: {', '.join(names)}"
            )
        return wanted

    def predict(self, batch: np.ndarray) -> np.ndarray:
        # InferenceSession.run is thread-safe, so the SUT may call this from any thread.
        (out,) = self.session.run([self.output_name], {self.input_name: batch})
        return np.asarray(out)

    def describe(self) -> dict[str, Any]:
        options = self.session.get_session_options()
        info: dict[str, Any] = {
            **super().describe(),
            "providers": self.session.get_providers(),
            "graph_optimization_level": self.optimization,
            "execution_mode": self.execution_mode,
            "intra_op_threads": options.intra_op_num_threads,
            "inter_op_threads": options.inter_op_num_threads,
            "model_file": self.model_path.name,
        }
        if self.converted_from:
            info["converted_from"] = self.converted_from
        return info

    def close(self) -> None:
        self.__dict__.pop("session", None)
