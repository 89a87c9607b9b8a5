"""The interface every framework backend implements.

A backend is one folder under ``services/inference/backends/``: ``config.py`` declares it
(services/inference/backends/spec.py) and the module its spec names holds the ``Backend``
subclass, imported only when a worker creates it, so that ``benchstack --help`` and the
API never wait for TensorFlow or torch to import. This interface sits beside the backends'
package, not in it, so that what runs a backend without being one (the profiling harness,
the thread rule) imports it without importing the backends: backends are created through
``services/inference/backends/registry.py``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from services.core.manifest import ModelManifest
from services.core.run_report import BackendSettings
from shared.devices import DeviceError
from shared.devices import parse_device as shared_parse_device


class BackendError(RuntimeError):
    """A backend cannot load or run the model; the message says why."""


class BackendUnavailable(BackendError):
    """The framework (or device) this backend needs is not installed or not present."""


@dataclass(frozen=True)
class BackendOptions(BackendSettings):
    """The settings a run records, checked: each backend reads what applies to it and
    ignores the rest."""

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


def choice_option(
    extra: Mapping[str, Any], key: str, accepted: Collection[str], default: str
) -> str:
    """The backend option ``key`` (``default`` when not given) in lower case, one of
    ``accepted``; else a BackendError naming the key and what it accepts."""
    value = str(extra.get(key, default)).lower()
    if value not in accepted:
        raise BackendError(f"{key}: {value!r} is not accepted; accepted: {', '.join(accepted)}")
    return value


# Called once per predict_async: (the output, None) on success, (None, the error) on failure.
AsyncCallback = Callable[[np.ndarray | None, BaseException | None], None]


class Backend(ABC):
    """Loads one model and predicts batches of prepared tensors.

    ``predict`` receives a batch already in the manifest's layout and element type and
    returns the model's first output as a NumPy array with the batch dimension first.
    A backend whose framework can have requests in flight (a server's client) sets
    ``asynchronous`` and implements ``predict_async``; the SUT then issues each query at
    LoadGen's time without waiting for earlier ones. Its spec says the same
    (``BackendSpec.asynchronous``), checked when the class is loaded.
    """

    name: str = ""
    asynchronous: ClassVar[bool] = False
    # Whether the thread counts take effect only when the model loads (an onnxruntime
    # session's pools, TensorFlow's): then a kept model serves only runs asking for the
    # same counts. False where ``resume`` applies a run's counts to the loaded model.
    threads_fixed_at_load: ClassVar[bool] = True

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

    def predict_async(self, batch: np.ndarray, callback: AsyncCallback) -> None:
        """Start one batch and return at once; ``callback`` is called on completion, from
        any thread. Only asynchronous backends implement it."""
        raise BackendError(f"backend {self.name!r} is not asynchronous")

    def warm_up(self, sample_batch: np.ndarray, iterations: int = 3) -> None:
        for _ in range(iterations):
            self.predict(sample_batch)

    def footprint_bytes(self) -> int:
        """Bytes the loaded model holds (weights, buffers), where the backend can tell; 0
        otherwise. The model cache takes the larger of this and the process's growth
        while loading, which misses memory the allocator had kept from earlier frees."""
        return 0

    def resume(self, options: BackendOptions) -> None:
        """Called before a run that reuses this loaded backend (the model cache), with that
        run's options (the same but for thread counts where ``threads_fixed_at_load`` is
        False): apply them, and set again any process-wide setting another model loaded
        since may have changed."""
        self.options = options

    def start_measurement(self) -> None:  # noqa: B027 - optional hook
        """Called once warm-up (and its timing) is over, before LoadGen's first query."""

    def describe(self) -> dict[str, Any]:
        """What to record with a run about how this backend was set up."""
        return {"name": self.name, "version": self.version(), "device": self.options.device}

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release sessions, connections or device memory."""


__all__ = [
    "AsyncCallback",
    "Backend",
    "BackendError",
    "BackendOptions",
    "BackendUnavailable",
    "parse_device",
]
