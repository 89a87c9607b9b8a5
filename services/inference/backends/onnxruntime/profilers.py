"""The ONNX Runtime backend's own instrument (FRAMEWORK: the session profiler's nodes),
named in its config.py."""

from __future__ import annotations

from services.inference.backend_interface import Backend
from services.inference.profiling.instruments import Instrument


def framework(backend: Backend) -> Instrument | str:
    from services.inference.profiling import onnxruntime_nodes

    return onnxruntime_nodes.OnnxRuntimeNodes(backend)
