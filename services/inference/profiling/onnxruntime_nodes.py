"""FRAMEWORK level for ONNX Runtime: its per-node profiling.

A pass runs on a session of its own, built like the backend's but with
``SessionOptions.enable_profiling``; ONNX Runtime then writes a JSON of trace events, one
``<node>_kernel_time`` event per node run (op type, input shapes, output and parameter
sizes) and one ``model_run`` per ``run``.

Clock alignment: ONNX Runtime's timestamps count from its profiling start. Each
``model_run`` (the i-th, in order) is shifted to the start of the window in which
benchstack's clock saw iteration i; the node events inside it move with it.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from services.inference.backend_interface import Backend
from services.inference.profiling.instruments import Instrument, Window
from services.inference.profiling.spans import Span

NODE_SUFFIX = "_kernel_time"


WARM_RUNS = 2


class OnnxRuntimeNodes(Instrument):
    def __init__(self, backend: Backend) -> None:
        super().__init__(backend)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._events: list[dict[str, Any]] = []
        self._session: Any = None
        self._warm_runs = 0

    def __enter__(self) -> OnnxRuntimeNodes:
        backend: Any = self.backend
        source = backend.session.get_session_options()
        options = ort.SessionOptions()
        options.graph_optimization_level = source.graph_optimization_level
        options.execution_mode = source.execution_mode
        options.intra_op_num_threads = source.intra_op_num_threads
        options.inter_op_num_threads = source.inter_op_num_threads
        self._tmp = tempfile.TemporaryDirectory(prefix="benchstack-ort-profile-")
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(self._tmp.name) / "ort")
        self._session = ort.InferenceSession(
            str(backend.model_path), options, providers=backend.requested_providers
        )
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        assert self._tmp is not None
        try:
            path = self._session.end_profiling()
            if exc_type is None:
                self._events = [e for e in json.loads(Path(path).read_text()) if e.get("ph") == "X"]
        finally:
            self._session = None
            self._tmp.cleanup()

    def predict(self, batch: np.ndarray, iteration: int) -> Any:
        backend: Any = self.backend
        return self._session.run([backend.output_name], {backend.input_name: batch})

    def warm(self, batch: np.ndarray) -> None:
        # A new session's first runs are slow (allocations, kernel choices); each round of
        # the interleaved passes makes one, so its first timed iteration would be cold.
        for _ in range(WARM_RUNS):
            self.predict(batch, -1)
        self._warm_runs = WARM_RUNS

    def spans(self, windows: list[Window]) -> list[Span]:
        runs = sorted(
            (e for e in self._events if e.get("name") == "model_run"), key=lambda e: e["ts"]
        )[self._warm_runs :]  # the warm-up's runs come first and are in no window
        nodes = [e for e in self._events if str(e.get("name", "")).endswith(NODE_SUFFIX)]
        spans: list[Span] = []
        for run, window in zip(runs, windows, strict=False):
            start, end = int(run["ts"]), int(run["ts"]) + int(run["dur"])
            offset_ns = window.start_ns - start * 1000
            for node in nodes:
                ts, dur = int(node["ts"]), int(node["dur"])
                if not (start <= ts and ts + dur <= end):
                    continue
                args = node.get("args") or {}
                spans.append(
                    Span(
                        str(node["name"]).removesuffix(NODE_SUFFIX),
                        "layer",
                        ts * 1000 + offset_ns,
                        dur * 1000,
                        window.thread,
                        {
                            "type": str(args.get("op_name", "")),
                            "input_shapes": _shapes(args.get("input_type_shape") or []),
                            "memory_bytes": int(args.get("output_size", 0) or 0),
                            "provider": str(args.get("provider", "")),
                            "iteration": window.iteration,
                        },
                    )
                )
        return spans


def _shapes(entries: list[dict[str, list[int]]]) -> list[list[int]]:
    """ONNX Runtime lists each input as {element type: shape}."""
    return [list(shape) for entry in entries for shape in entry.values()]
