"""ONNX models into layers: op types in topological order, shapes inferred at the asked
batch, constants described (never weights' values), producers as the graph wires them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from services.inference.backends.convert import ConvertedModel
from services.workloads.bricks import parse_onnx as parse_onnx_module
from services.workloads.bricks.parse import ParseError
from services.workloads.bricks.parse_onnx import parse_onnx
from tests.services.workloads.bricks.onnx_models import branchy_model


def test_an_exported_cnn_parses_with_the_shapes_onnxruntime_computes(
    tiny_onnx: ConvertedModel,
) -> None:
    parsed = parse_onnx(tiny_onnx.path, "tiny", batch_size=3)
    assert [layer.type for layer in parsed.layers][:3] == ["Conv", "Relu", "MaxPool"]
    assert parsed.layers[-1].type == "Gemm" and parsed.input_shape == [3, 1, 32, 32]
    # Every layer's output shape is the one onnxruntime produces for a batch of 3.
    model = onnx.load(str(tiny_onnx.path))
    outputs = [layer_output for node in model.graph.node for layer_output in node.output[:1]]
    model.graph.output.extend(onnx.ValueInfoProto(name=name) for name in outputs)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: np.zeros((3, 1, 32, 32), np.float32)}
    produced = dict(
        zip([o.name for o in session.get_outputs()], session.run(None, feed), strict=True)
    )
    for layer, node in zip(parsed.layers, parsed.nodes, strict=True):
        assert layer.output_shape == produced[node.output[0]].shape, layer.type
    # A chain: each layer reads the one before it, and the first reads the graph input.
    assert parsed.layers[0].producers == ()
    assert all(layer.producers == (layer.index - 1,) for layer in parsed.layers[1:])


def test_producers_shapes_and_constants_follow_the_graph() -> None:
    parsed = parse_onnx(branchy_model(), "branchy", batch_size=2)
    types = [layer.type for layer in parsed.layers]
    assert types == ["Conv", "Relu", "Conv", "Relu", "Add", "Reshape", "Softmax"]  # no Constant
    conv, _, _, _, add, reshape, softmax = parsed.layers
    assert conv.input_shapes == ((2, 4, 8, 8),) and conv.output_shape == (2, 4, 8, 8)
    assert add.producers == (1, 3)  # both branches
    assert reshape.producers == (4,) and reshape.output_shape == (2, 256)
    assert softmax.attributes["attributes"] == {"axis": 1}
    weight, bias = conv.attributes["constants"]
    assert weight == {"slot": 1, "dtype": "float", "shape": [4, 4, 3, 3], "role": "weight"}
    assert bias["shape"] == [4] and "value" not in bias
    # Reshape's target shape is a setting: its value changes what is computed.
    (shape,) = reshape.attributes["constants"]
    assert shape["role"] == "setting" and shape["value"] == [0, -1]


def test_descriptions_hold_no_weight_values_or_names() -> None:
    model = branchy_model()
    parsed = parse_onnx(model, "branchy")
    text = json.dumps([layer.describe() for layer in parsed.layers])
    assert "secret" not in text
    first_weight = float(onnx.numpy_helper.to_array(model.graph.initializer[0]).flat[0])
    assert repr(first_weight) not in text


def test_a_fixed_batch_other_than_the_asked_one_is_refused() -> None:
    model = branchy_model()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1
    with pytest.raises(ParseError, match=r"batch-size: 2, but fixed fixes input .* to batch 1"):
        parse_onnx(model, "fixed", batch_size=2)


def test_a_symbolic_dimension_besides_the_batch_is_refused() -> None:
    model = branchy_model()
    model.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "height"
    with pytest.raises(ParseError, match="dimension 2 is symbolic .height.; accepted: models"):
        parse_onnx(model, "tall")


def test_shapes_that_cannot_be_inferred_are_refused(tmp_path: Path) -> None:
    model = branchy_model()
    # Reshape to a shape read from a second graph input: no static shape follows.
    model.graph.input.append(
        onnx.helper.make_tensor_value_info("target", onnx.TensorProto.INT64, [2])
    )
    reshape = next(n for n in model.graph.node if n.op_type == "Reshape")
    reshape.input[1] = "target"
    with pytest.raises(ParseError, match="shape of .* cannot be inferred"):
        parse_onnx(model, "dynamic")


def test_a_file_that_is_not_onnx_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "notes.onnx"
    path.write_text("these are not the weights you are looking for\n" * 10)
    with pytest.raises(ParseError, match=r"model: notes \(notes.onnx\) is not"):
        parse_onnx(path, "notes")
    with pytest.raises(ParseError, match="is not a file; accepted: a path to an .onnx file"):
        parse_onnx(tmp_path / "absent.onnx", "absent")


def test_size_limits_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.onnx"
    onnx.save(branchy_model(), str(path))
    monkeypatch.setattr(parse_onnx_module, "MAX_FILE_BYTES", 100)
    with pytest.raises(ParseError, match="accepted: ONNX files up to 0 GiB"):
        parse_onnx(path, "big")
    monkeypatch.setattr(parse_onnx_module, "MAX_NODES", 3)
    with pytest.raises(ParseError, match="has 8 nodes; accepted: at most 3"):
        parse_onnx(branchy_model(), "many")


def test_control_flow_is_refused_with_the_reason() -> None:
    model = branchy_model()
    body = onnx.helper.make_graph([], "body", [], [])
    model.graph.node.append(
        onnx.helper.make_node("If", ["secret_x"], ["z"], then_branch=body, else_branch=body)
    )
    with pytest.raises(ParseError, match="holds a subgraph .control flow.; accepted"):
        parse_onnx(model, "branching")
