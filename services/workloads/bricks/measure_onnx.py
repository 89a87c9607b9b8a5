"""ONNX bricks as callables for ``measure.time_modules``: one onnxruntime session each
(CPU provider, intra-op threads from ``MeasureSettings.threads``), called on fixed inputs
exactly as a torch brick's module is, so both go through the same LoadGen SUT.

Sessions run with onnxruntime's default graph optimisations, as the onnxruntime backend
runs whole models: a brick of Conv + Relu is timed fused, as the model would run it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

from services.workloads.bricks.parse_onnx import dtype_of

PROVIDER = "CPUExecutionProvider"


class OnnxCallable:
    """``callable(*arrays)`` runs the model once on the arrays, fed in the graph's input
    order, and returns every output, as a torch module's call does."""

    def __init__(self, model: bytes | Path, threads: int = 0) -> None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads  # 0: onnxruntime's default
        options.inter_op_num_threads = 1  # sequential execution: one operator at a time
        source = str(model) if isinstance(model, Path) else model
        self.session = ort.InferenceSession(source, options, providers=[PROVIDER])
        self.input_names = [i.name for i in self.session.get_inputs()]

    def __call__(self, *arrays: np.ndarray) -> list[Any]:
        feeds = dict(zip(self.input_names, arrays, strict=True))
        return list(self.session.run(None, feeds))


def onnx_inputs(description: dict[str, Any], seed: int = 0) -> tuple[np.ndarray, ...]:
    """Arrays of the shapes and element types the brick's description records: floats
    standard normal, integers small and non-negative (valid indices), booleans false."""
    rng = np.random.default_rng(seed)
    arrays = []
    for shape, type_name in zip(description["inputs"], description["input_types"], strict=True):
        dtype = helper.tensor_dtype_to_np_dtype(dtype_of(type_name))
        if np.issubdtype(dtype, np.floating):
            arrays.append(rng.standard_normal(shape, dtype=np.float32).astype(dtype))
        elif np.issubdtype(dtype, np.integer):
            arrays.append(rng.integers(0, 2, shape).astype(dtype))
        else:
            arrays.append(np.zeros(shape, dtype))
    return tuple(arrays)


def empty_onnx_brick(threads: int = 0) -> tuple[OnnxCallable, tuple[np.ndarray, ...]]:
    """The ONNX floor: one trivial Add through a session like every ONNX brick's (the torch
    empty brick's ``x + 0``), so its latency is what each ONNX brick call pays anyway."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["input0", "constant0"], ["layer0_0"], name="layer0")],
        "brick",
        [helper.make_tensor_value_info("input0", onnx.TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("layer0_0", onnx.TensorProto.FLOAT, [1])],
        initializer=[helper.make_tensor("constant0", onnx.TensorProto.FLOAT, [1], [0.0])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return OnnxCallable(model.SerializeToString(), threads), (np.zeros(1, np.float32),)


def onnxruntime_version() -> str:
    return str(ort.__version__)


def onnxruntime_system(threads: int) -> str:
    """An ONNX brick's runtime in the system key. onnxruntime's default thread count is
    not readable before a session exists: 0 threads is keyed as ``tdefault``."""
    return f"onnxruntime{onnxruntime_version()}-cpu-t{threads or 'default'}"
