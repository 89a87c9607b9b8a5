"""PyTorch backend: eager, TorchScript (traced) or torch.compile, on CPU or CUDA.

Options (``BackendOptions.extra``): ``mode`` = eager | torchscript | compile.
``torch.compile`` falls back to eager when it fails, and ``describe()`` says so.
"""

from __future__ import annotations

import contextlib
import pickle
from typing import Any

import numpy as np
import torch

from services.core.manifest import ModelManifest, verify_model_files
from services.inference.backend_interface import (
    Backend,
    BackendError,
    BackendOptions,
    BackendUnavailable,
)
from services.inference.backends.torch.architectures import build_architecture

MODES = ("eager", "torchscript", "compile")


class TorchBackend(Backend):
    name = "torch"
    threads_fixed_at_load = False

    def version(self) -> str:
        return str(torch.__version__)

    def load(self, manifest: ModelManifest) -> None:
        self.mode = str(self.options.extra.get("mode", "eager"))
        if self.mode not in MODES:
            raise BackendError(f"mode: {self.mode!r} is not accepted; accepted: {', '.join(MODES)}")
        self.fallback_reason = ""
        if self.options.device.startswith("cuda") and not torch.cuda.is_available():
            raise BackendUnavailable("device: CUDA was asked for but torch sees no GPU")
        self.device = torch.device(self.options.device)
        self._set_threads()
        verify_model_files(manifest)
        model = self._read_model(manifest).to(self.device).eval()
        self._dtype = getattr(torch, manifest.inputs[0].element_type)
        self._example_shape = (1, *manifest.inputs[0].shape)
        self.model = self._prepare(model)

    def footprint_bytes(self) -> int:
        module = self.model if isinstance(self.model, torch.nn.Module) else None
        if module is None:
            return 0
        tensors = [*module.parameters(), *module.buffers()]
        return sum(t.numel() * t.element_size() for t in tensors)

    def resume(self, options: BackendOptions) -> None:
        # torch's intra-op thread count is the process's, set per run: this run's choice,
        # whatever another cached model set since this one loaded.
        super().resume(options)
        self._set_threads()

    def _set_threads(self) -> None:
        if self.options.intra_op_threads:
            torch.set_num_threads(self.options.intra_op_threads)
        if self.options.inter_op_threads:
            # Settable once per process only; describe() records the value in force.
            with contextlib.suppress(RuntimeError):
                torch.set_num_interop_threads(self.options.inter_op_threads)

    def _read_model(self, manifest: ModelManifest) -> torch.nn.Module:
        source = manifest.source
        if source.file is not None:
            assert source.file.path is not None
            path = manifest.resolve_path(source.file.path)
            # TorchScript archives hold no pickled Python objects: safe to load.
            return torch.jit.load(str(path), map_location="cpu")
        assert source.architecture is not None
        model = build_architecture(source.architecture)
        if source.weights is not None:
            assert source.weights.path is not None
            path = manifest.resolve_path(source.weights.path)
            try:
                state = torch.load(path, map_location="cpu", weights_only=True)
            except (pickle.UnpicklingError, RuntimeError, EOFError) as exc:
                first_line = str(exc).strip().splitlines()[0]
                raise BackendError(
                    f"source.weights: {path.name} is not a plain tensor state dict "
                    f"(refused by weights-only loading): {first_line}"
                ) from exc
            try:
                model.load_state_dict(state)
            except RuntimeError as exc:
                raise BackendError(
                    f"source.weights: do not fit {source.architecture}: {exc}"
                ) from exc
        return model

    def _prepare(self, model: torch.nn.Module) -> Any:
        example = torch.zeros(self._example_shape, dtype=self._dtype, device=self.device)
        if self.mode == "torchscript":
            with torch.inference_mode():
                return torch.jit.freeze(torch.jit.trace(model, example))
        if self.mode == "compile":
            try:
                compiled = torch.compile(model)
                with torch.inference_mode():
                    compiled(example)
                return compiled
            except Exception as exc:  # torch.compile fails in many environment-specific ways
                self.fallback_reason = (
                    f"torch.compile failed, ran eager: {type(exc).__name__}: {exc}"
                )
                return model
        return model

    def predict(self, batch: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            tensor = torch.from_numpy(batch).to(self.device, non_blocking=True)
            out = self.model(tensor)
            if isinstance(out, (tuple, list)):
                out = out[0]
            return out.float().cpu().numpy()

    def describe(self) -> dict[str, Any]:
        info = {
            **super().describe(),
            "mode": self.mode,
            "intra_op_threads": torch.get_num_threads(),
            "inter_op_threads": torch.get_num_interop_threads(),
        }
        if self.fallback_reason:
            info["fallback"] = self.fallback_reason
        if self.device.type == "cuda":
            info["gpu"] = torch.cuda.get_device_name(self.device)
        return info
