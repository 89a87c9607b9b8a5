"""Small real ONNX models for the bricks tests, built with onnx.helper: every name in them
starts with a prefix, so a test can look for any of them in a generated suite."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def branchy_model(prefix: str = "secret", seed: int = 0, channels: int = 4) -> onnx.ModelProto:
    """x[N, C, 8, 8] -> Conv -> Relu = a; a -> Conv -> Relu = b; Add(a, b) -> Reshape to
    [N, -1] (its shape from a Constant node) -> Softmax. The batch dimension is symbolic."""
    rng = np.random.default_rng(seed)

    def name(text: str) -> str:
        return f"{prefix}_{text}"

    def weight(text: str, shape: tuple[int, ...]) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name(text))

    nodes = [
        helper.make_node(
            "Conv",
            [name("x"), name("w1"), name("b1")],
            [name("conv1_out")],
            name=name("conv1"),
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
            doc_string=name("doc"),
        ),
        helper.make_node("Relu", [name("conv1_out")], [name("a")], name=name("relu1")),
        helper.make_node(
            "Conv",
            [name("a"), name("w2")],
            [name("conv2_out")],
            name=name("conv2"),
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
        ),
        helper.make_node("Relu", [name("conv2_out")], [name("b")], name=name("relu2")),
        helper.make_node("Add", [name("a"), name("b")], [name("sum")], name=name("add")),
        helper.make_node(
            "Constant",
            [],
            [name("shape")],
            name=name("shape_constant"),
            value=numpy_helper.from_array(np.array([0, -1], np.int64), name("shape_value")),
        ),
        helper.make_node(
            "Reshape", [name("sum"), name("shape")], [name("flat")], name=name("reshape")
        ),
        helper.make_node("Softmax", [name("flat")], [name("y")], name=name("softmax"), axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        name("graph"),
        [helper.make_tensor_value_info(name("x"), TensorProto.FLOAT, ["batch", channels, 8, 8])],
        [helper.make_tensor_value_info(name("y"), TensorProto.FLOAT, ["batch", channels * 64])],
        initializer=[
            weight("w1", (channels, channels, 3, 3)),
            weight("b1", (channels,)),
            weight("w2", (channels, channels, 3, 3)),
        ],
        doc_string=name("graph_doc"),
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name=name("producer")
    )
    model.ir_version = 8
    model.doc_string = name("model_doc")
    helper.set_model_props(model, {name("key"): name("value")})
    onnx.checker.check_model(model)
    return model


def names_in(model: onnx.ModelProto) -> set[str]:
    """Every name and text the model carries: nodes, tensors, graph, docs, metadata."""
    graph = model.graph
    found = {graph.name, graph.doc_string, model.doc_string, model.producer_name}
    for node in graph.node:
        found |= {node.name, node.doc_string, *node.input, *node.output}
        found |= {a.t.name for a in node.attribute if a.type == onnx.AttributeProto.TENSOR}
    for value in [*graph.input, *graph.output, *graph.value_info]:
        found.add(value.name)
    found |= {t.name for t in graph.initializer}
    found |= {p.key for p in model.metadata_props} | {p.value for p in model.metadata_props}
    return {n for n in found if n}
