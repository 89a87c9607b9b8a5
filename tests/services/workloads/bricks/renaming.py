"""Models with every name changed and nothing else: a torch model whose sub-modules and
attributes all sit under new names, an ONNX model whose nodes, tensors and graph are all
renamed. Each new name holds a marker, so a test can look for any of them in a suite."""

from __future__ import annotations

import copy
from typing import Any

import onnx
import torch
from torch import fx, nn

MARKER = "zqmark"


def renamed_torch(model: nn.Module) -> fx.GraphModule:
    """The traced model with each module and attribute it uses under a new flat name
    (``zqmark0q`` ...): the same computation, none of the old names. Its fx node names,
    derived from module paths, change with them."""
    traced = fx.symbolic_trace(model.eval())
    root = nn.Module()
    graph = fx.Graph()
    new_names: dict[str, str] = {}
    mapped: dict[fx.Node, fx.Node] = {}
    for node in traced.graph.nodes:
        copied = graph.node_copy(node, lambda n: mapped[n])
        if node.op in ("call_module", "get_attr"):
            target = str(node.target)
            if target not in new_names:
                new_names[target] = f"{MARKER}{len(new_names)}q"
                _attach(root, new_names[target], _fetch(traced, target))
            copied.target = new_names[target]
        mapped[node] = copied
    return fx.GraphModule(root, graph, class_name="Renamed").eval()


def _fetch(module: nn.Module, target: str) -> Any:
    found: Any = module
    for part in target.split("."):
        found = getattr(found, part)
    return found


def _attach(root: nn.Module, name: str, value: Any) -> None:
    if isinstance(value, nn.Module):
        root.add_module(name, value)
    elif isinstance(value, nn.Parameter):
        root.register_parameter(name, value)
    elif isinstance(value, torch.Tensor):
        root.register_buffer(name, value)
    else:
        setattr(root, name, value)


def renamed_onnx(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy whose graph, nodes and tensors (inputs, outputs, initializers, activations)
    all have new names holding the marker; nothing else changes."""
    renamed = copy.deepcopy(model)
    graph = renamed.graph
    names: dict[str, str] = {}

    def new(name: str) -> str:
        if not name:
            return name  # an absent optional input stays absent
        return names.setdefault(name, f"{MARKER}{len(names)}q")

    graph.name = new(graph.name)
    for number, node in enumerate(graph.node):
        node.name = f"{MARKER}node{number}q"
        node.input[:] = [new(t) for t in node.input]
        node.output[:] = [new(t) for t in node.output]
    for value in [*graph.input, *graph.output, *graph.value_info]:
        value.name = new(value.name)
    for tensor in graph.initializer:
        tensor.name = new(tensor.name)
    return renamed
