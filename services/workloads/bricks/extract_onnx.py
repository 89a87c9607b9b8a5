"""One ONNX layer sequence as a standalone ONNX model: an ONNX brick.

The brick's graph holds only the sequence's nodes. What they read from outside becomes a
graph input (``input0`` ...); every constant they read becomes an initializer of its own
(``constant0`` ...): a weight drawn afresh, a small setting (a shape, axes, pads ...)
with its value kept, since the computation depends on it. Nodes are ``layer0`` ...,
their outputs ``layer0_0`` ..., the graph ``brick``; no doc string or metadata is
copied. The file tells what is computed on which shapes, never the model's names.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from services.workloads.bricks.parse_onnx import ParsedOnnxModel, dtype_of
from services.workloads.bricks.signature import LayerSequence
from services.workloads.bricks.signature_onnx import external_inputs, sequence_outputs

PRODUCER = "benchstack-bricks"


def brick_onnx(parsed: ParsedOnnxModel, sequence: LayerSequence, seed: int = 0) -> onnx.ModelProto:
    """The sequence's nodes as a model with neutral names and fresh weights."""
    rng = np.random.default_rng(seed)
    inputs = external_inputs(parsed, sequence.layers)
    renamed = {t: f"input{j}" for j, t in enumerate(inputs)}
    initializers: list[onnx.TensorProto] = []
    nodes = []
    for k, i in enumerate(sequence.layers):
        source = parsed.nodes[i]
        described = iter(parsed.layers[i].attributes["constants"])
        node_inputs = []
        for tensor in source.input:
            if not tensor:
                node_inputs.append("")
            elif tensor in parsed.constants:
                name = f"constant{len(initializers)}"
                initializers.append(fresh_constant(next(described), name, rng))
                node_inputs.append(name)
            else:
                node_inputs.append(renamed[tensor])
        node_outputs = []
        for m, tensor in enumerate(source.output):
            if tensor:
                renamed[tensor] = f"layer{k}_{m}"
            node_outputs.append(renamed.get(tensor, ""))
        node = helper.make_node(
            source.op_type, node_inputs, node_outputs, name=f"layer{k}", domain=source.domain
        )
        node.attribute.extend(_neutral_attribute(a) for a in source.attribute)
        nodes.append(node)

    def value_info(tensor: str) -> onnx.ValueInfoProto:
        info = parsed.tensors[tensor]
        return helper.make_tensor_value_info(renamed[tensor], info.dtype, info.shape)

    graph = helper.make_graph(
        nodes,
        "brick",
        [value_info(t) for t in inputs],
        [value_info(t) for t in sequence_outputs(parsed, sequence.layers)],
        initializer=initializers,
    )
    opsets = [
        helper.make_opsetid("" if domain == "ai.onnx" else domain, version)
        for domain, version in sequence.description["opsets"].items()
    ]
    model = helper.make_model(graph, opset_imports=opsets, producer_name=PRODUCER)
    model.ir_version = parsed.model.ir_version  # what the source's runtime reads
    return model


def fresh_constant(
    described: dict[str, Any], name: str, rng: np.random.Generator
) -> onnx.TensorProto:
    """A constant input as the description records it: a setting's kept value, or new
    values of its dtype and shape (floats: normal, sd 0.02; integers: small, non-negative
    so indices stay valid; booleans: false)."""
    dtype = helper.tensor_dtype_to_np_dtype(dtype_of(described["dtype"]))
    shape = tuple(described["shape"])
    if "value" in described:
        values = np.asarray(described["value"], dtype=dtype).reshape(shape)
    elif np.issubdtype(dtype, np.floating):
        values = (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(dtype)
    elif np.issubdtype(dtype, np.integer):
        values = (
            np.zeros(shape, dtype)
            if described["role"] == "setting"
            else rng.integers(0, 8, shape).astype(dtype)
        )
    else:
        values = np.zeros(shape, dtype)
    return numpy_helper.from_array(values, name)


def _neutral_attribute(attribute: onnx.AttributeProto) -> onnx.AttributeProto:
    """A copy without its doc string; a tensor attribute becomes zeros of its dtype and
    shape (its values are not part of the description)."""
    copied = onnx.AttributeProto()
    copied.CopyFrom(attribute)
    copied.ClearField("doc_string")
    if attribute.type == onnx.AttributeProto.TENSOR:
        copied.t.CopyFrom(_zeros_like(attribute.t))
    elif attribute.type == onnx.AttributeProto.TENSORS:
        del copied.tensors[:]
        copied.tensors.extend(_zeros_like(t) for t in attribute.tensors)
    return copied


def _zeros_like(tensor: onnx.TensorProto) -> onnx.TensorProto:
    dtype = helper.tensor_dtype_to_np_dtype(tensor.data_type)
    return numpy_helper.from_array(np.zeros(tuple(tensor.dims), dtype))
