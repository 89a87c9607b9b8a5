"""Layer sequences: a model cut into consecutive runs of at most H layers, each keyed by
a stable hash of what its layers compute (types, shapes, attributes and the wiring
inside the sequence), never by weights, names or positions in the model."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx

from services.workloads.bricks.parse import ParsedModel, jsonable, shape_of

MAX_GRANULARITY = 64


@dataclass(frozen=True)
class LayerSequence:
    """Consecutive layers of one model (indices in its topological order)."""

    layers: tuple[int, ...]
    signature: str
    description: dict[str, Any]


def check_granularity(granularity: int) -> None:
    if not 1 <= granularity <= MAX_GRANULARITY:
        raise ValueError(
            f"granularity: {granularity} is not accepted; accepted: 1..{MAX_GRANULARITY} "
            "layers per brick"
        )


def cut_sequences(parsed: ParsedModel, granularity: int) -> list[LayerSequence]:
    """Non-overlapping sequences of at most ``granularity`` layers, in topological order."""
    return [
        sequence_of(parsed, indices) for indices in cut_indices(len(parsed.layers), granularity)
    ]


def cut_indices(count: int, granularity: int) -> list[tuple[int, ...]]:
    """``count`` layers in consecutive runs of at most ``granularity``, in order: the cut
    every framework's layers get."""
    check_granularity(granularity)
    return [
        tuple(range(start, min(start + granularity, count)))
        for start in range(0, count, granularity)
    ]


def sequence_of(parsed: ParsedModel, indices: tuple[int, ...]) -> LayerSequence:
    description = describe_sequence(parsed, indices)
    return LayerSequence(indices, signature_of(description), description)


def signature_of(description: dict[str, Any]) -> str:
    """sha256 of the canonical JSON: equal computations, equal keys, on any machine."""
    text = json.dumps(description, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def is_constant(value: Any) -> bool:
    """A value a brick may bake in: holds no tensor (sizes, ints, dtypes ...)."""
    if isinstance(value, torch.Tensor):
        return False
    if isinstance(value, (tuple, list)):
        return all(is_constant(v) for v in value)
    if isinstance(value, dict):
        return all(is_constant(v) for v in value.values())
    return True


def external_inputs(parsed: ParsedModel, indices: tuple[int, ...]) -> list[fx.Node]:
    """Nodes outside the sequence whose tensor values its layers read, in first-use order
    (glue computed from the sequence's own layers is replayed inside, not an input)."""
    inside = {parsed.layers[i].node for i in indices}
    nodes = parsed.node_by_name
    found: list[fx.Node] = []
    known: dict[str, bool] = {}

    def visit(node: fx.Node) -> None:
        for arg in node.all_input_nodes:
            if arg.name in inside or is_constant(parsed.values.get(arg.name)):
                continue
            if arg.name not in parsed.layer_of_node and depends_on(arg, inside, known):
                visit(arg)
            elif arg not in found:
                found.append(arg)

    for i in indices:
        visit(nodes[parsed.layers[i].node])
    return found


def depends_on(node: fx.Node, inside: set[str], known: dict[str, bool] | None = None) -> bool:
    """Whether ``node`` reads, through any path, a node in ``inside``. ``known`` remembers
    the answer per node: without it, graphs whose branches meet again (residual blocks,
    channel shuffles) are walked once per path, which grows exponentially."""
    known = {} if known is None else known
    if node.name not in known:
        known[node.name] = any(
            a.name in inside or depends_on(a, inside, known) for a in node.all_input_nodes
        )
    return known[node.name]


def describe_sequence(parsed: ParsedModel, indices: tuple[int, ...]) -> dict[str, Any]:
    """The sequence as a suite may show it: layers, their inputs' shapes and how the
    layers feed each other, with no node names and no place in the model."""
    inputs = external_inputs(parsed, indices)
    position = {parsed.layers[i].node: k for k, i in enumerate(indices)}
    input_number = {n.name: j for j, n in enumerate(inputs)}
    nodes = parsed.node_by_name

    def source(node: fx.Node) -> list[str]:
        if node.name in position:
            return [f"layer:{position[node.name]}"]
        if node.name in input_number:
            return [f"input:{input_number[node.name]}"]
        if is_constant(parsed.values.get(node.name)):
            return []
        # glue computed inside the sequence: name what it reads
        return [s for a in node.all_input_nodes for s in source(a)]

    layers = []
    for i in indices:
        node = nodes[parsed.layers[i].node]
        reads = [s for a in node.all_input_nodes for s in source(a)]
        layers.append({**parsed.layers[i].describe(), "reads": reads})
    return {
        "inputs": [jsonable(shape_of(parsed.values[n.name])) for n in inputs],
        "layers": layers,
    }


class BrickError(ValueError):
    """A sequence that cannot become a brick (torch.export or onnx's checker refuses it)."""
