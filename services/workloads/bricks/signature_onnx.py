"""Layer sequences of an ONNX model, keyed as torch sequences are (signature.py) but in
their own key space: each description says ``"framework": "onnx"`` and each layer's kind
is ``onnx``, so an ONNX brick never shares a signature with a torch one."""

from __future__ import annotations

from typing import Any

from services.workloads.bricks.parse_onnx import ParsedOnnxModel, dtype_name
from services.workloads.bricks.signature import LayerSequence, cut_indices, signature_of

FRAMEWORK = "onnx"


def cut_onnx_sequences(parsed: ParsedOnnxModel, granularity: int) -> list[LayerSequence]:
    """Non-overlapping sequences of at most ``granularity`` layers, in topological order."""
    sequences = []
    for indices in cut_indices(len(parsed.layers), granularity):
        description = describe_onnx_sequence(parsed, indices)
        sequences.append(LayerSequence(indices, signature_of(description), description))
    return sequences


def external_inputs(parsed: ParsedOnnxModel, indices: tuple[int, ...]) -> list[str]:
    """Activations the sequence reads from outside (graph inputs or earlier layers), in
    first-use order; constants are not inputs, each brick carries its own."""
    produced_inside = {t for i in indices for t in parsed.nodes[i].output if t}
    found: list[str] = []
    for i in indices:
        for tensor in parsed.nodes[i].input:
            if not tensor or tensor in parsed.constants or tensor in produced_inside:
                continue
            if tensor not in found:
                found.append(tensor)
    return found


def sequence_outputs(parsed: ParsedOnnxModel, indices: tuple[int, ...]) -> list[str]:
    """The sequence's outputs that no layer inside it reads (at least the last layer's
    first), so no computed value is left unused. Decided from inside the sequence only,
    so equal descriptions always give equal bricks."""
    read_inside = {t for i in indices for t in parsed.nodes[i].input if t}
    unread = [t for i in indices for t in parsed.nodes[i].output if t and t not in read_inside]
    return unread or [parsed.nodes[indices[-1]].output[0]]


def describe_onnx_sequence(parsed: ParsedOnnxModel, indices: tuple[int, ...]) -> dict[str, Any]:
    """What the sequence computes, on which shapes, wired how, at which opset: no tensor or
    node name and no place in the model."""
    inputs = external_inputs(parsed, indices)
    input_number = {t: j for j, t in enumerate(inputs)}
    position = {i: k for k, i in enumerate(indices)}

    def source(tensor: str) -> str:
        if tensor in input_number:
            return f"input:{input_number[tensor]}"
        layer, output = parsed.producer_of[tensor]
        return f"layer:{position[layer]}:{output}"

    layers = []
    for i in indices:
        node = parsed.nodes[i]
        constant_number = 0
        reads = []
        for tensor in node.input:
            if not tensor:
                reads.append("absent")
            elif tensor in parsed.constants:
                reads.append(f"constant:{constant_number}")
                constant_number += 1
            else:
                reads.append(source(tensor))
        layers.append({**parsed.layers[i].describe(), "reads": reads})
    domains = {parsed.nodes[i].domain or "ai.onnx" for i in indices}
    return {
        "framework": FRAMEWORK,
        "opsets": {d: v for d, v in sorted(parsed.opsets.items()) if d in domains},
        "inputs": [list(parsed.tensors[t].shape) for t in inputs],
        "input_types": [dtype_name(parsed.tensors[t].dtype) for t in inputs],
        "layers": layers,
        "outputs": [
            source_of_output(parsed, position, t) for t in sequence_outputs(parsed, indices)
        ],
    }


def source_of_output(parsed: ParsedOnnxModel, position: dict[int, int], tensor: str) -> str:
    layer, output = parsed.producer_of[tensor]
    return f"layer:{position[layer]}:{output}"
