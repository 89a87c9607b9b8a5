"""An ONNX model as its layers in topological order, with shapes and attributes (no weights).

The graph is read as it is: every node is a layer (type = its op_type), except
``Constant`` nodes, whose values are folded in with the initializers: both are *constant
inputs* a layer reads, described by dtype and shape. Shapes come from
``onnx.shape_inference`` (with data propagation, so Shape -> Gather -> Reshape chains
resolve) after the batch dimension of each graph input is fixed to the requested size.

A constant input is either a *weight* or a *setting*, as the operator's schema says: an
input the schema marks non-differentiable (Reshape's shape, Resize's scales, Clip's
bounds, Gather's indices, Pad's pads ...) is a setting whose value changes what is
computed, and a small one (at most ``MAX_SETTING_ELEMENTS``) keeps its value in the
description; any other constant is a weight and is described by dtype and shape only.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import defs, helper, numpy_helper, shape_inference

from services.workloads.bricks.parse import Layer, ParseError

# protobuf cannot hold a model over 2 GiB in one message; a file over it is refused early.
MAX_FILE_BYTES = 2 * 1024**3
MAX_NODES = 50_000
# A non-differentiable constant input of at most this many elements keeps its value.
MAX_SETTING_ELEMENTS = 64
KIND = "onnx"
# Attribute types a brick cannot copy without carrying names along (subgraphs) or that
# onnx's shape inference would have to evaluate (sparse tensors).
_REFUSED_ATTRIBUTES = {
    onnx.AttributeProto.GRAPH: "a subgraph (control flow)",
    onnx.AttributeProto.GRAPHS: "subgraphs (control flow)",
    onnx.AttributeProto.SPARSE_TENSOR: "a sparse tensor",
    onnx.AttributeProto.SPARSE_TENSORS: "sparse tensors",
}


@dataclass(frozen=True)
class TensorInfo:
    """An activation's element type (TensorProto enum) and static shape."""

    dtype: int
    shape: tuple[int, ...]


@dataclass
class ParsedOnnxModel:
    """A shape-inferred ONNX model and its layers in topological order."""

    name: str
    model: onnx.ModelProto = field(repr=False)  # with the batch fixed and shapes inferred
    layers: list[Layer]
    nodes: list[onnx.NodeProto] = field(repr=False)  # layer i is nodes[i]
    tensors: dict[str, TensorInfo] = field(repr=False)  # every activation by name
    constants: dict[str, onnx.TensorProto] = field(repr=False)  # initializers, Constant outputs
    graph_inputs: list[str] = field(default_factory=list)
    producer_of: dict[str, tuple[int, int]] = field(default_factory=dict)  # -> (layer, output)

    @property
    def input_shape(self) -> list[int]:
        """The first graph input's shape (batch included), as a recipe records it."""
        return list(self.tensors[self.graph_inputs[0]].shape)

    @property
    def opsets(self) -> dict[str, int]:
        return {o.domain or "ai.onnx": o.version for o in self.model.opset_import}


def dtype_name(dtype: int) -> str:
    """ONNX's own name for an element type, lower case: float, float16, int64, bool ..."""
    return str(onnx.TensorProto.DataType.Name(dtype)).lower()


def dtype_of(name: str) -> int:
    """The element type ``dtype_name`` wrote."""
    return int(onnx.TensorProto.DataType.Value(name.upper()))


def load_onnx(source: str | Path | onnx.ModelProto, name: str) -> onnx.ModelProto:
    """The ModelProto, refused with the limit or the problem named."""
    if isinstance(source, onnx.ModelProto):
        return source
    path = Path(source)
    if not path.is_file():
        raise ParseError(f"model: {path} is not a file; accepted: a path to an .onnx file")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ParseError(
            f"model: {name} ({path.name}) is {size / 1024**3:.1f} GiB; accepted: ONNX files "
            f"up to {MAX_FILE_BYTES // 1024**3} GiB"
        )
    try:
        # Weights kept beside the file (external data) are never read: only shapes matter.
        return onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf's DecodeError and friends
        raise ParseError(f"model: {name} ({path.name}) is not an ONNX model: {exc}") from exc


def parse_onnx(
    source: str | Path | onnx.ModelProto, name: str = "model", *, batch_size: int = 1
) -> ParsedOnnxModel:
    """Describe the layers of an ONNX model at ``batch_size``."""
    model = copy.deepcopy(load_onnx(source, name))
    graph = model.graph
    if len(graph.node) > MAX_NODES:
        raise ParseError(
            f"model: {name} has {len(graph.node)} nodes; accepted: at most {MAX_NODES}"
        )
    if not graph.node:
        raise ParseError(f"model: {name} is not an ONNX model with a graph (no nodes found)")
    if model.functions:
        raise ParseError(
            f"model: {name} defines its own functions ({model.functions[0].name}); accepted: "
            "graphs of standard operators"
        )
    try:
        onnx.checker.check_model(model)
    except Exception as exc:  # ValidationError; its text says which node or field
        raise ParseError(f"model: {name} is not a valid ONNX model: {exc}") from exc
    _refuse_unsupported_attributes(graph, name)
    constants = {t.name: t for t in graph.initializer}
    graph_inputs = [i.name for i in graph.input if i.name not in constants]
    if not graph_inputs:
        raise ParseError(f"model: {name} has no graph input to feed")
    _fix_batch(graph, graph_inputs, batch_size, name)
    del graph.value_info[:]  # the exporter's symbolic shapes would be merged, not replaced
    try:
        inferred = shape_inference.infer_shapes(
            model, check_type=True, strict_mode=True, data_prop=True
        )
    except Exception as exc:  # InferenceError names the node and the rule it broke
        raise ParseError(f"model: {name}: shapes cannot be inferred: {exc}") from exc
    for node in inferred.graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            constants[node.output[0]] = _constant_of(node)
    tensors = _tensor_infos(inferred.graph, name)
    _check_every_shape_known(inferred.graph, tensors, constants, name)
    nodes = [n for n in inferred.graph.node if n.output[0] not in constants]
    if not nodes:
        raise ParseError(f"model: {name} has no layers that compute tensors")
    producer_of: dict[str, tuple[int, int]] = {}
    layers: list[Layer] = []
    opset = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    for index, node in enumerate(nodes):
        layers.append(
            _layer(
                index, node, tensors, constants, producer_of, opset.get(node.domain or "ai.onnx")
            )
        )
        for number, output in enumerate(node.output):
            if output:
                producer_of[output] = (index, number)
    return ParsedOnnxModel(
        name, inferred, layers, nodes, tensors, constants, graph_inputs, producer_of
    )


def _refuse_unsupported_attributes(graph: onnx.GraphProto, name: str) -> None:
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type in _REFUSED_ATTRIBUTES:
                raise ParseError(
                    f"model: {name}: a {node.op_type} node holds "
                    f"{_REFUSED_ATTRIBUTES[attribute.type]}; accepted: graphs without "
                    "subgraphs or sparse tensors"
                )


def _fix_batch(graph: onnx.GraphProto, graph_inputs: list[str], batch_size: int, name: str) -> None:
    """Dimension 0 of every graph input becomes ``batch_size`` where it is symbolic; any
    other symbolic dimension is refused, since a brick needs static shapes. A fixed first
    dimension is the batch only on the first input (others may hold anything there):
    there, a batch other than the one asked for is refused rather than silently kept."""
    for value in graph.input:
        if value.name not in graph_inputs:
            continue
        if not value.type.HasField("tensor_type"):
            raise ParseError(
                f"model: {name}: input {value.name!r} is not a tensor; accepted: tensor inputs"
            )
        dims = value.type.tensor_type.shape.dim
        if not dims:
            continue  # a scalar input
        first = dims[0]
        if not first.HasField("dim_value"):
            first.Clear()
            first.dim_value = batch_size
        elif first.dim_value != batch_size and value.name == graph_inputs[0]:
            raise ParseError(
                f"batch-size: {batch_size}, but {name} fixes input {value.name!r} to batch "
                f"{first.dim_value}; accepted: {first.dim_value}, or a model whose batch "
                "dimension is symbolic"
            )
        for position, dim in enumerate(dims):
            if not dim.HasField("dim_value"):
                raise ParseError(
                    f"model: {name}: input {value.name!r} dimension {position} is symbolic "
                    f"({dim.dim_param or '?'}); accepted: models whose only symbolic "
                    "dimension is the batch (dimension 0)"
                )


def _tensor_infos(graph: onnx.GraphProto, name: str) -> dict[str, TensorInfo]:
    """Every activation's dtype and static shape, or the tensor whose shape is unknown."""
    infos: dict[str, TensorInfo] = {}
    for value in [*graph.input, *graph.value_info, *graph.output]:
        tensor_type = value.type.tensor_type
        if not value.type.HasField("tensor_type"):
            raise ParseError(f"model: {name}: {value.name!r} is not a tensor; accepted: tensors")
        dims = tensor_type.shape.dim
        if not tensor_type.HasField("shape") or any(not d.HasField("dim_value") for d in dims):
            raise ParseError(
                f"model: {name}: the shape of {value.name!r} cannot be inferred statically; "
                "accepted: models whose shapes follow from the input shapes"
            )
        infos[value.name] = TensorInfo(tensor_type.elem_type, tuple(d.dim_value for d in dims))
    return infos


def _check_every_shape_known(
    graph: onnx.GraphProto,
    tensors: dict[str, TensorInfo],
    constants: dict[str, onnx.TensorProto],
    name: str,
) -> None:
    for node in graph.node:
        for tensor in [*node.input, *node.output]:
            if tensor and tensor not in tensors and tensor not in constants:
                raise ParseError(
                    f"model: {name}: the shape of {tensor!r} ({node.op_type} node) cannot be "
                    "inferred; accepted: models whose shapes follow from the input shapes"
                )


def _constant_of(node: onnx.NodeProto) -> onnx.TensorProto:
    """A Constant node's value as a tensor, whichever attribute form it uses."""
    attribute = node.attribute[0]
    if attribute.name == "value":
        return attribute.t
    value = np.asarray(helper.get_attribute_value(attribute))
    if attribute.name.startswith("value_float"):
        value = value.astype(np.float32)
    elif attribute.name.startswith("value_int"):
        value = value.astype(np.int64)
    return numpy_helper.from_array(value)


def _layer(
    index: int,
    node: onnx.NodeProto,
    tensors: dict[str, TensorInfo],
    constants: dict[str, onnx.TensorProto],
    producer_of: dict[str, tuple[int, int]],
    opset: int | None,
) -> Layer:
    activations = [t for t in node.input if t and t not in constants]
    outputs = [tensors[t].shape for t in node.output if t]
    constant_inputs = [
        describe_constant(constants[t], slot, is_setting(node, slot, opset))
        for slot, t in enumerate(node.input)
        if t in constants
    ]
    return Layer(
        index=index,
        node=node.name or f"node{index}",
        kind=KIND,
        type=node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}",
        input_shapes=tuple(tensors[t].shape for t in activations),
        output_shape=outputs[0] if len(outputs) == 1 else tuple(outputs),
        attributes={
            "attributes": {a.name: _plain(a) for a in node.attribute},
            "constants": constant_inputs,
            "input_types": [dtype_name(tensors[t].dtype) for t in activations],
            # Which slot reads what: an absent optional input shifts the rest.
            "slots": [
                "absent" if not t else "constant" if t in constants else "activation"
                for t in node.input
            ],
        },
        producers=tuple(sorted({producer_of[t][0] for t in activations if t in producer_of})),
    )


def is_setting(node: onnx.NodeProto, slot: int, opset: int | None) -> bool:
    """Whether the operator's schema marks input ``slot`` non-differentiable: a shape,
    axes, scales, pads, bounds or indices, not a learned weight."""
    try:
        schema = defs.get_schema(node.op_type, opset or 1, node.domain)
    except Exception:  # an operator onnx does not know: its constants count as weights
        return False
    formal = schema.inputs[min(slot, len(schema.inputs) - 1)] if schema.inputs else None
    if formal is None:
        return False
    category = formal.differentiation_category
    return bool(category == defs.OpSchema.DifferentiationCategory.NonDifferentiable)


def describe_constant(tensor: onnx.TensorProto, slot: int, setting: bool) -> dict[str, Any]:
    """A constant input by dtype and shape; a small setting with its value too."""
    described: dict[str, Any] = {
        "slot": slot,
        "dtype": dtype_name(tensor.data_type),
        "shape": list(tensor.dims),
        "role": "setting" if setting else "weight",
    }
    elements = int(np.prod(tensor.dims)) if tensor.dims else 1
    external = tensor.data_location == onnx.TensorProto.EXTERNAL
    if setting and elements <= MAX_SETTING_ELEMENTS and not external:
        described["value"] = numpy_helper.to_array(tensor).tolist()
    return described


def _plain(attribute: onnx.AttributeProto) -> Any:
    """An attribute as plain JSON: numbers, strings, lists; a tensor by dtype and shape."""
    if attribute.type == onnx.AttributeProto.TENSOR:
        return {"dtype": dtype_name(attribute.t.data_type), "shape": list(attribute.t.dims)}
    if attribute.type == onnx.AttributeProto.TENSORS:
        return [
            {"dtype": dtype_name(t.data_type), "shape": list(t.dims)} for t in attribute.tensors
        ]
    value = helper.get_attribute_value(attribute)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
    return value
