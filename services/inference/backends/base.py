"""The interface every framework backend implements, and the registry that finds them.

A backend is one folder under ``services/inference/backends/`` whose ``backend.py`` holds
a ``Backend`` subclass. Backends are registered by name and imported lazily, so that
``benchstack --help`` and the API never wait for TensorFlow or torch to import.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shared.devices import DeviceError
from shared.devices import parse_device as shared_parse_device
from shared.manifest import ModelManifest


class BackendError(RuntimeError):
    """A backend cannot load or run the model; the message says why."""


class BackendUnavailable(BackendError):
    """The framework (or device) this backend needs is not installed or not present."""


@dataclass(frozen=True)
class BackendOptions:
    """Framework-neutral knobs; each backend reads what applies to it and ignores the rest."""

    device: str = "cpu"
    # 0 leaves the framework's own default.
    intra_op_threads: int = 0
    inter_op_threads: int = 0
    # Backend-specific options, e.g. {"mode": "torchscript"} or {"url": "127.0.0.1:8001"}.
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        parse_device(self.device)
        if self.intra_op_threads < 0 or self.inter_op_threads < 0:
            raise BackendError("threads: must be 0 (the framework's default) or more")


def parse_device(device: str) -> tuple[str, int]:
    """'cpu', 'cuda' or 'cuda:<index>' -> (kind, index); anything else names the field."""
    try:
        parsed = shared_parse_device(device)
    except DeviceError as exc:
        raise BackendError(str(exc)) from None
    return parsed.kind, parsed.index or 0


class Backend(ABC):
    """Loads one model and predicts batches of prepared tensors.

    ``predict`` receives a batch already in the manifest's layout and element type and
    returns the model's first output as a NumPy array with the batch dimension first.
    """

    name: str = ""

    def __init__(self, options: BackendOptions | None = None) -> None:
        self.options = options or BackendOptions()

    @abstractmethod
    def version(self) -> str:
        """The framework's version string, e.g. torch.__version__."""

    @abstractmethod
    def load(self, manifest: ModelManifest) -> None:
        """Build or read the model; verifies model files against their sha256."""

    @abstractmethod
    def predict(self, batch: np.ndarray) -> np.ndarray:
        """Run one batch; must be safe to call from the SUT's worker thread."""

    def warm_up(self, sample_batch: np.ndarray, iterations: int = 3) -> None:
        for _ in range(iterations):
            self.predict(sample_batch)

    def start_measurement(self) -> None:  # noqa: B027 - optional hook
        """Called once warm-up (and its timing) is over, before LoadGen's first query."""

    def describe(self) -> dict[str, Any]:
        """What to record with a run about how this backend was set up."""
        return {"name": self.name, "version": self.version(), "device": self.options.device}

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release sessions, connections or device memory."""


# name -> "module:Class"; one folder per backend, imported only when asked for.
_REGISTRY: dict[str, str] = {
    "null": "services.inference.backends.null.backend:NullBackend",
    "torch": "services.inference.backends.torch.backend:TorchBackend",
    "onnxruntime": "services.inference.backends.onnxruntime.backend:OnnxRuntimeBackend",
    "tensorflow": "services.inference.backends.tensorflow.backend:TensorFlowBackend",
    "triton": "services.inference.backends.triton.backend:TritonBackend",
    "tensorrt": "services.inference.backends.tensorrt.backend:TensorRTBackend",
}


def backend_names() -> list[str]:
    return list(_REGISTRY)


def create_backend(name: str, options: BackendOptions | None = None) -> Backend:
    if name not in _REGISTRY:
        raise BackendError(f"framework: unknown backend {name!r}; accepted: {', '.join(_REGISTRY)}")
    module_name, class_name = _REGISTRY[name].split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendUnavailable(
            f"framework: backend {name!r} needs a package that is not installed ({exc.name}); "
            f"install it with: pip install 'benchstack[{name}]'"
        ) from exc
    cls: type[Backend] = getattr(module, class_name)
    return cls(options)
