"""A torch model as its layers in topological order, with shapes and attributes (no weights).

torch.fx traces the model; an interpreter runs one random input through the trace and
records every node's value, which gives the input/output shapes and the concrete value of
non-tensor glue (``x.size(0)``, shape tuples) that a brick later needs as a constant.

A *layer* is a call whose value is a tensor or holds one: a leaf module (Conv2d,
BatchNorm2d, ReLU, Linear, MultiheadAttention ...) or a functional op (add, flatten,
cat, chunk ...). Calls whose value holds no tensor (sizes, shape tuples) are glue: they
are not layers, but a brick may replay them. (Tuples count as layers since vit_b_16's
attention, which returns (out, None), was found missing from every brick: its bricks
summed to 0.65 of the measured model.)
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import torch
from torch import fx, nn

# What a tensor argument is described as: its shape is recorded apart (input_shapes).
TENSOR = "<tensor>"
# Module attributes that are weights, buffers or bookkeeping, never part of a description.
_SKIPPED_ATTRIBUTES = frozenset({"training", "inplace"})


class ParseError(ValueError):
    """The model cannot be traced into layers."""


@dataclass(frozen=True)
class Layer:
    """One layer: what it computes, on which shapes, with which settings."""

    index: int  # position in topological order among the model's layers
    node: str  # the fx node's name (kept in the parse only, never in a generated suite)
    kind: str  # "module", "function" or "method"
    type: str  # Conv2d, add, flatten ...
    input_shapes: tuple[Any, ...]
    output_shape: tuple[Any, ...]  # a tuple of shapes for a call returning several values
    attributes: dict[str, Any]
    # Indices of the layers whose outputs this one reads (through glue as well).
    producers: tuple[int, ...] = ()

    def describe(self) -> dict[str, Any]:
        """The layer as a generated suite may show it: no node name, no position."""
        return {
            "kind": self.kind,
            "type": self.type,
            "input_shapes": jsonable(self.input_shapes),
            "output_shape": jsonable(self.output_shape),
            "attributes": self.attributes,
        }


@dataclass
class ParsedModel:
    """A traced model, its recorded values, and its layers in topological order."""

    name: str
    module: fx.GraphModule
    example: torch.Tensor
    layers: list[Layer]
    # node name -> the value it produced for the example input
    values: dict[str, Any] = field(repr=False, default_factory=dict)
    layer_of_node: dict[str, int] = field(default_factory=dict)

    @cached_property
    def node_by_name(self) -> dict[str, fx.Node]:
        """The trace's nodes by name: looked up for every sequence and brick cut from it."""
        return {n.name: n for n in self.module.graph.nodes}

    @cached_property
    def module_by_name(self) -> dict[str, nn.Module]:
        """The trace's sub-modules by path: walking them for every brick cost 6 % of
        generating the catalogue's bricks."""
        return dict(self.module.named_modules())

    @property
    def input_shape(self) -> list[int]:
        """The example's shape (batch included), as a recipe records it."""
        return list(self.example.shape)


class _Recorder(fx.Interpreter):
    """Runs the trace and keeps every node's value."""

    def __init__(self, module: fx.GraphModule) -> None:
        super().__init__(module)
        self.values: dict[str, Any] = {}

    def run_node(self, n: fx.Node) -> Any:
        value = super().run_node(n)
        self.values[n.name] = value
        return value


def parse_model(model: nn.Module, example: torch.Tensor, name: str = "model") -> ParsedModel:
    """Trace ``model`` (in eval mode) and describe its layers for ``example``."""
    model = model.eval()
    try:
        traced = fx.symbolic_trace(model)
    except Exception as exc:  # fx refuses data-dependent control flow in many shapes
        raise ParseError(f"model: {name} cannot be traced by torch.fx: {exc}") from exc
    recorder = _Recorder(traced)
    with torch.inference_mode():
        recorder.run(example)
    values = recorder.values
    modules = dict(traced.named_modules())
    layers: list[Layer] = []
    layer_of_node: dict[str, int] = {}
    for node in traced.graph.nodes:
        if node.op not in ("call_module", "call_function", "call_method"):
            continue
        if not _holds_tensor(values[node.name]):
            continue
        index = len(layers)
        layer_of_node[node.name] = index
        layers.append(
            Layer(
                index=index,
                node=node.name,
                kind={"call_module": "module", "call_function": "function"}.get(node.op, "method"),
                type=_type_name(node, modules),
                input_shapes=tuple(
                    shape_of(values.get(a.name)) for a in _tensor_args(node, values)
                ),
                output_shape=shape_of(values[node.name]),
                attributes=_attributes(node, modules, values),
                producers=tuple(sorted(_producing_layers(node, layer_of_node))),
            )
        )
    if not layers:
        raise ParseError(f"model: {name} has no layers that compute tensors")
    return ParsedModel(name, traced, example, layers, values, layer_of_node)


def _holds_tensor(value: Any) -> bool:
    """A tensor, or a tuple holding one: attention's (out, weights), chunk, split, LSTM.
    Calls returning only sizes or other plain values are glue, not layers."""
    if isinstance(value, torch.Tensor):
        return True
    return isinstance(value, (tuple, list)) and any(_holds_tensor(v) for v in value)


def _type_name(node: fx.Node, modules: dict[str, nn.Module]) -> str:
    if node.op == "call_module":
        return type(modules[str(node.target)]).__name__
    if node.op == "call_method":
        return str(node.target)
    target = node.target
    return getattr(target, "__name__", str(target))


def _tensor_args(node: fx.Node, values: dict[str, Any]) -> list[fx.Node]:
    """The nodes among the call's arguments whose values are tensors, in order."""
    found: list[fx.Node] = []

    def visit(arg: Any) -> Any:
        if isinstance(arg, fx.Node) and isinstance(values.get(arg.name), torch.Tensor):
            found.append(arg)
        return arg

    fx.node.map_aggregate((node.args, node.kwargs), visit)
    return found


def _producing_layers(node: fx.Node, layer_of_node: dict[str, int]) -> set[int]:
    """Layers whose values reach ``node``, looking through glue nodes."""
    reached = walk(
        node.all_input_nodes, lambda n: n.all_input_nodes, lambda n: n.name in layer_of_node
    )
    return {layer_of_node[n.name] for n in reached if n.name in layer_of_node}


def walk(
    start: Iterable[fx.Node],
    step: Callable[[fx.Node], Iterable[fx.Node]],
    stop: Callable[[fx.Node], bool],
) -> Iterator[fx.Node]:
    """Every node reached from ``start`` by ``step`` (inputs or users), each once; a node
    for which ``stop`` holds is yielded but not walked past."""
    stack = list(start)
    seen: set[str] = set()
    while stack:
        current = stack.pop()
        if current.name in seen:
            continue
        seen.add(current.name)
        yield current
        if not stop(current):
            stack.extend(step(current))


def shape_of(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return tuple(value.shape)
    if isinstance(value, (tuple, list)):
        return tuple(shape_of(v) for v in value)
    return None


def _attributes(
    node: fx.Node, modules: dict[str, nn.Module], values: dict[str, Any]
) -> dict[str, Any]:
    """Settings that change the computation: a module's plain attributes, or an op's
    non-tensor arguments (glue resolved to the values it had)."""
    if node.op == "call_module":
        module = modules[str(node.target)]
        attributes = {
            key: jsonable(value)
            for key, value in vars(module).items()
            if not key.startswith("_") and key not in _SKIPPED_ATTRIBUTES and _is_plain(value)
        }
        if isinstance(getattr(module, "bias", None), torch.Tensor):
            attributes["bias"] = True
        elif hasattr(module, "bias"):
            attributes["bias"] = False
        return attributes

    def value_of(arg: fx.Node) -> Any:
        value = values.get(arg.name)
        return TENSOR if isinstance(value, torch.Tensor) else value

    def constant(arg: Any) -> Any:
        # Every node is replaced by its value, however deep it sits: ``cat``'s list of
        # tensors once turned into a list of node names, which told a brick's place in
        # the model (stage2_0_branch1_4) and kept equal bricks apart.
        return jsonable(
            fx.node.map_aggregate(arg, lambda a: value_of(a) if isinstance(a, fx.Node) else a)
        )

    args = [constant(a) for a in node.args]
    kwargs = {k: constant(v) for k, v in sorted(node.kwargs.items()) if k != "inplace"}
    return {"args": args, "kwargs": kwargs} if kwargs else {"args": args}


def _is_plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (tuple, list)):
        return all(_is_plain(v) for v in value)
    return False


def jsonable(value: Any) -> Any:
    """Plain JSON values: tuples become lists, dtypes and other objects their text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list, torch.Size)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, torch.Tensor):
        return TENSOR
    if isinstance(value, fx.Node):
        # Only a node's value may be described, never its name: callers resolve nodes
        # first, and one that slips through is a bug to see, not a name to ship.
        raise TypeError(f"jsonable: fx node {value.name!r} given instead of its value")
    if value is operator.getitem:
        return "getitem"
    if isinstance(value, slice):
        return {"slice": [jsonable(value.start), jsonable(value.stop), jsonable(value.step)]}
    if callable(value) and hasattr(value, "__qualname__"):
        # A function passed as an argument: its qualified name, since str() would add
        # its address and change the signature from one process to the next.
        return f"{getattr(value, '__module__', None) or ''}.{value.__qualname__}"
    return str(value)
