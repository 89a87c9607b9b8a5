"""One layer sequence as a standalone module: a brick.

The brick is a new fx graph holding only the sequence's layers (and the glue they compute
from each other); everything else the layers read becomes an input, or a constant when it
held no tensor. Nodes and sub-modules get neutral names (``layer0``, ``m0`` ...) and the
sub-modules fresh random weights, so an exported brick says what it computes and on which
shapes, never where it sat in the model, what the model is called or what it learned.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import fx, nn

from services.workloads.bricks.parse import ParsedModel, shape_of, walk
from services.workloads.bricks.signature import (
    LayerSequence,
    depends_on,
    external_inputs,
    is_constant,
)


def brick_module(
    parsed: ParsedModel, sequence: LayerSequence, seed: int = 0, *, fresh_weights: bool = True
) -> fx.GraphModule:
    """The sequence's layers as a GraphModule; its inputs are ``brick_inputs``'s tensors.
    ``fresh_weights=False`` keeps the model's weights (tests compare with the model)."""
    source_nodes = parsed.node_by_name
    inside = {parsed.layers[i].node for i in sequence.layers}
    inputs = external_inputs(parsed, sequence.layers)
    modules = parsed.module_by_name
    graph = fx.Graph()
    root = nn.Module()
    mapped: dict[str, fx.Node] = {}
    for number, node in enumerate(inputs):
        mapped[node.name] = graph.placeholder(f"input{number}")

    known: dict[str, bool] = {}
    wanted = _nodes_to_copy(parsed, inside, known)
    # The CPU generator alone, where the weights are drawn: torch.manual_seed seeds every
    # accelerator's too, about 1 ms a brick.
    torch.default_generator.manual_seed(seed)
    for count, name in enumerate(wanted):
        node = source_nodes[name]

        def arg_for(arg: fx.Node) -> Any:
            if arg.name in mapped:
                return mapped[arg.name]
            value = parsed.values.get(arg.name)
            if is_constant(value):
                return value  # sizes and other glue results, baked in
            raise ValueError(f"brick: {arg.name} is neither an input nor computed inside")

        target = node.target
        if node.op == "call_module":
            original = modules[str(node.target)]
            module = _with_random_weights(original) if fresh_weights else copy.deepcopy(original)
            target = f"m{count}"
            root.add_module(target, module)
        copied = graph.create_node(
            node.op,
            target,
            fx.node.map_arg(node.args, arg_for),
            fx.node.map_arg(node.kwargs, arg_for),
            name=f"layer{count}" if name in inside else f"glue{count}",
        )
        mapped[name] = copied

    outputs = [mapped[n] for n in _outputs(parsed, sequence, inside)]
    graph.output(outputs[0] if len(outputs) == 1 else tuple(outputs))
    module = fx.GraphModule(root, graph, class_name="Brick")
    return module.eval()


def brick_inputs(description: dict[str, Any], seed: int = 0) -> tuple[Any, ...]:
    """Random tensors of the shapes the brick's description records, in input order."""
    generator = torch.Generator().manual_seed(seed)

    def random(shape: list[Any] | None) -> Any:
        if shape is None:
            return None  # a non-tensor slot of a tuple, e.g. attention's (out, None)
        if any(part is None or isinstance(part, list) for part in shape):
            return tuple(random(part) for part in shape)  # a tuple (chunk, split, attention)
        return torch.randn(tuple(shape), generator=generator)

    return tuple(random(shape) for shape in description["inputs"])


def brick_output_shapes(parsed: ParsedModel, sequence: LayerSequence) -> Any:
    """The shapes (``shape_of``) ``brick_module``'s module returns: one output's, or a
    tuple of them, as the model computed them."""
    inside = {parsed.layers[i].node for i in sequence.layers}
    shapes = tuple(shape_of(parsed.values[n]) for n in _outputs(parsed, sequence, inside))
    return shapes[0] if len(shapes) == 1 else shapes


def _nodes_to_copy(parsed: ParsedModel, inside: set[str], known: dict[str, bool]) -> list[str]:
    """The sequence's layers and the glue between them, in the model's order."""
    wanted = []
    for node in parsed.module.graph.nodes:
        if node.op not in ("call_module", "call_function", "call_method"):
            continue
        if node.name in inside:
            wanted.append(node.name)
        elif (
            node.name not in parsed.layer_of_node
            and not is_constant(parsed.values.get(node.name))
            and depends_on(node, inside, known)
            and _feeds(node, inside)
        ):
            wanted.append(node.name)  # glue computed from the sequence, read by it
    return wanted


def _feeds(node: fx.Node, inside: set[str]) -> bool:
    """Whether a layer inside the sequence reads ``node``, directly or through others."""
    reached = walk(node.users, lambda n: n.users, lambda n: n.name in inside)
    return any(n.name in inside for n in reached)


def _outputs(parsed: ParsedModel, sequence: LayerSequence, inside: set[str]) -> list[str]:
    """The sequence's layers that nothing inside it reads (at least the last one), so no
    computed value is left unused."""
    source_nodes = parsed.node_by_name
    names = [parsed.layers[i].node for i in sequence.layers]
    unread = [n for n in names if not any(u.name in inside for u in source_nodes[n].users)]
    return unread or names[-1:]


def _with_random_weights(module: nn.Module) -> nn.Module:
    """A copy whose weights are drawn again: the framework's own initialisation where the
    module has one, small normal values otherwise. Timing needs shapes, not what was learnt."""
    fresh = copy.deepcopy(module)
    with torch.no_grad():
        for child in fresh.modules():
            reset = getattr(child, "reset_parameters", None)
            if callable(reset):
                reset()
            else:
                for parameter in child.parameters(recurse=False):
                    parameter.normal_(0.0, 0.02)
    return fresh
