"""FRAMEWORK level for TensorFlow: Keras per-layer timing.

The backend predicts through one ``tf.function`` graph, in which layers have no
boundaries a timer can see. This pass runs the same Keras functional model eagerly, one
operation (layer) after another through Keras's own graph walk
(``Functional._run_through_graph``, whose ``operation_fn`` hook wraps each layer call),
timing each on benchstack's clock. Eager CPU kernels run synchronously, so a layer's time
is its own. The pass's latency is that of eager execution, not the graph's: the NONE pass
stays the headline, and coverage compares layer time with this pass's own iterations.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from services.inference.backend_interface import Backend
from services.inference.profiling.instruments import Instrument, Window, spans_within
from services.inference.profiling.spans import Span, now_ns

EAGER_NOTE = (
    "FRAMEWORK (tensorflow): layers timed in eager execution, one Keras layer at a time; "
    "the graph the backend runs fuses them, so this pass's latency is not the headline's"
)


def functional_graph(model: Any) -> Any:
    """The functional graph of a Keras model: itself, or the one a Sequential builds."""
    for candidate in (model, getattr(model, "_functional", None)):
        if candidate is not None and hasattr(candidate, "_run_through_graph"):
            return candidate
    return None


def unprofilable(backend: Backend) -> str:
    """Why Keras layer timing cannot see this backend's model ('' when it can)."""
    model = getattr(backend, "keras_model", None)
    if model is None:
        return "FRAMEWORK: a SavedModel signature has no Keras layers to time"
    if functional_graph(model) is None:
        return f"FRAMEWORK: {type(model).__name__} has no Keras functional graph to walk"
    return ""


def _shapes(values: Any) -> list[list[int]]:
    if hasattr(values, "shape"):
        return [[int(d) for d in values.shape]]
    if isinstance(values, (tuple, list)):
        return [shape for value in values for shape in _shapes(value)]
    return []


def _bytes(values: Any) -> int:
    if hasattr(values, "shape") and hasattr(values, "dtype"):
        return int(np.prod(values.shape)) * int(np.dtype(values.dtype.name).itemsize)
    if isinstance(values, (tuple, list)):
        return sum(_bytes(value) for value in values)
    return 0


class KerasLayers(Instrument):
    def __init__(self, backend: Backend) -> None:
        super().__init__(backend)
        self.graph: Any = functional_graph(backend.keras_model)  # type: ignore[attr-defined]
        self._recorded: list[Span] = []

    def _timed(self, operation: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            if "training" in getattr(operation, "_call_context_args", {}):
                kwargs["training"] = False
            start = now_ns()
            output = operation(*args, **kwargs)
            end = now_ns()
            self._recorded.append(
                Span(
                    operation.name,
                    "layer",
                    start,
                    end - start,
                    threading.get_native_id(),
                    {
                        "type": type(operation).__name__,
                        "input_shapes": _shapes(args),
                        "memory_bytes": _bytes(output),
                    },
                )
            )
            return output

        return call

    def predict(self, batch: np.ndarray, iteration: int) -> Any:
        import tensorflow as tf

        backend: Any = self.backend
        with tf.device(backend.tf_device):
            inputs = self.graph._standardize_inputs(tf.convert_to_tensor(batch))
            outputs = self.graph._run_through_graph(inputs, operation_fn=self._timed)
        return outputs

    def spans(self, windows: list[Window]) -> list[Span]:
        return spans_within(self._recorded, windows)

    def notes(self) -> list[str]:
        return [EAGER_NOTE]
