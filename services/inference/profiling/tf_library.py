"""LIBRARY level for TensorFlow: TensorFlow's own profiler below the Keras layers.

The pass walks the Keras functional graph eagerly, as the FRAMEWORK pass does
(``keras_layers``), with each layer call inside a ``tf.profiler.experimental.Trace``
marker ``layer::<name>`` and each iteration inside ``benchstack::forward#<i>``. A
profiler session (``tf.profiler.experimental.start``/``stop``) records the markers and
every operation the eager executor runs (``EagerLocalExecute: MatMul``), on the thread
that called it. The session's XSpace is converted to trace-viewer JSON by TensorFlow's
profiler plugin (``xspace_to_tools_data``), then read like torch's Kineto trace: events
shifted per iteration onto benchstack's clock (the ``forward`` marker to the start of
the window benchstack saw), operators named ``tf::<Op>``, so ``layer_ops`` gives each
layer its operators.
"""

from __future__ import annotations

import glob
import json
import tempfile
from typing import Any

import numpy as np

from services.inference.backend_interface import Backend
from services.inference.profiling.instruments import Instrument, Window
from services.inference.profiling.keras_layers import EAGER_NOTE, functional_graph
from services.inference.profiling.spans import Span, clamp_to_parents

FORWARD_MARK = "benchstack::forward#"
LAYER_MARK = "layer::"
OP_PREFIX = "EagerLocalExecute: "


class TensorFlowLibrary(Instrument):
    def __init__(self, backend: Backend) -> None:
        super().__init__(backend)
        self.graph: Any = functional_graph(backend.keras_model)  # type: ignore[attr-defined]
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> TensorFlowLibrary:
        import tensorflow as tf

        self._folder = tempfile.TemporaryDirectory(prefix="benchstack-tf-profile-")
        tf.profiler.experimental.start(self._folder.name)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        import tensorflow as tf

        assert self._folder is not None
        try:
            tf.profiler.experimental.stop()
            if exc_type is None:
                self._events = _trace_events(self._folder.name)
        finally:
            self._folder.cleanup()
            self._folder = None

    def _marked(self, operation: Any) -> Any:
        import tensorflow as tf

        def call(*args: Any, **kwargs: Any) -> Any:
            if "training" in getattr(operation, "_call_context_args", {}):
                kwargs["training"] = False
            with tf.profiler.experimental.Trace(LAYER_MARK + operation.name):
                return operation(*args, **kwargs)

        return call

    def predict(self, batch: np.ndarray, iteration: int) -> Any:
        import tensorflow as tf

        backend: Any = self.backend
        with (
            tf.profiler.experimental.Trace(f"{FORWARD_MARK}{iteration}"),
            tf.device(backend.tf_device),
        ):
            inputs = self.graph._standardize_inputs(tf.convert_to_tensor(batch))
            return self.graph._run_through_graph(inputs, operation_fn=self._marked)

    def spans(self, windows: list[Window]) -> list[Span]:
        by_iteration = {w.iteration: w for w in windows}
        spans: list[Span] = []
        for mark in (e for e in self._events if e["name"].startswith(FORWARD_MARK)):
            window = by_iteration.get(int(mark["name"].removeprefix(FORWARD_MARK)))
            if window is None:
                continue
            start_us, end_us = mark["ts"], mark["ts"] + mark["dur"]
            offset_ns = window.start_ns - round(start_us * 1000)
            for event in self._events:
                inside = start_us <= event["ts"] and event["ts"] + event["dur"] <= end_us
                if event is mark or event["tid"] != mark["tid"] or not inside:
                    continue
                spans.extend(_converted(event, offset_ns, window))
        return clamp_to_parents(spans)

    def notes(self) -> list[str]:
        return [EAGER_NOTE.replace("FRAMEWORK", "LIBRARY", 1)]


def _trace_events(folder: str) -> list[dict[str, Any]]:
    """The session's complete events (name, ts and dur in µs, tid) from its XSpace."""
    from tensorflow.python.profiler.internal import _pywrap_profiler_plugin as plugin

    files = glob.glob(f"{folder}/**/*.xplane.pb", recursive=True)
    if not files:
        return []
    # "trace_viewer@" answers Chrome trace JSON; plain "trace_viewer" a protobuf.
    data = plugin.xspace_to_tools_data(files, "trace_viewer@", {})
    raw = data[0] if isinstance(data, tuple) else data
    document = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
    return [
        {
            "name": str(e.get("name", "")),
            "ts": float(e["ts"]),
            "dur": float(e.get("dur", 0)),
            "tid": e.get("tid"),
        }
        for e in document.get("traceEvents", [])
        if e.get("ph") == "X" and "ts" in e
    ]


def _converted(event: dict[str, Any], offset_ns: int, window: Window) -> list[Span]:
    name = event["name"]
    if name.startswith(LAYER_MARK):
        name, kind = name.removeprefix(LAYER_MARK), "library-layer"
    elif name.startswith(OP_PREFIX):
        name, kind = "tf::" + name.removeprefix(OP_PREFIX), "library"
    else:
        return []  # the executor's own steps (validation, handle deletion): not operators
    start = max(round(event["ts"] * 1000) + offset_ns, window.start_ns)
    end = min(round((event["ts"] + event["dur"]) * 1000) + offset_ns, window.end_ns)
    return [
        Span(name, kind, start, max(0, end - start), window.thread, {"iteration": window.iteration})
    ]
