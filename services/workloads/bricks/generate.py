"""Generate a brick suite: every model cut into sequences of at most H layers, each unique
sequence exported once as a runnable brick, and each model's recipe kept apart.

A suite folder holds two things with different owners::

    bricks/<signature>.torchfx  a torch brick: its fx graph as JSON, modules by allow-listed
                              class and constructor arguments (fx_brick; random weights
                              when read, neutral names); safe to read from anyone's suite
    bricks/<signature>.pt2    a torch brick the torchfx format cannot hold (torch.export)
    bricks/<signature>.onnx   an ONNX brick (a standalone graph, same rules; extract_onnx)
    bricks/<signature>.json   what it computes: layer types, shapes, settings
    bricks/<signature>.values.npz  for a brick timed differently on other values (max
                              pooling), the order of the values its inputs held in the
                              model: what it is timed on (recorded_values)
    recipes/<model>.json      which bricks make the model, in order, and what each reads,
                              and how the model was named to generate (its "spec")

``bricks/`` is what a vendor may be sent: no file in it names the model, its nodes or
the order of its layers. ``recipes/`` stays with the model's owner; construction needs it.
Generating into a folder that already holds bricks adds only the missing ones.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import torch
from torch import nn

from services.workloads.bricks.extract import brick_inputs, brick_module, brick_output_shapes
from services.workloads.bricks.fx_brick import SUFFIX as TORCHFX
from services.workloads.bricks.fx_brick import (
    Unrebuildable,
    check_rebuilt,
    encode_brick,
)
from services.workloads.bricks.parse import ParsedModel, parse_model
from services.workloads.bricks.recorded_values import (
    recordable,
    value_dependent,
    values_path,
    write_values,
)
from services.workloads.bricks.signature import (
    BrickError,
    LayerSequence,
    check_granularity,
    cut_sequences,
    external_inputs,
)
from services.workloads.bricks.suite import brick_file, bricks_dir, recipe_path

if TYPE_CHECKING:
    from services.workloads.bricks.parse_onnx import ParsedOnnxModel

MAX_BATCH_SIZE = 256
MAX_MODELS = 200
MIN_IMAGE_SIZE, MAX_IMAGE_SIZE = 16, 1024
T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelInput:
    """A model to cut: its name in recipes, the module and one example input."""

    name: str
    module: nn.Module
    example: torch.Tensor
    # How it was named to generate (an architecture, a manifest or catalogue name), kept in
    # its recipe so `bricks construct --measure NAME` can build it again.
    spec: str | None = None


@dataclass(frozen=True)
class OnnxModelInput:
    """An ONNX model to cut: its name in recipes, the file (or an onnx.ModelProto) and the
    batch its symbolic batch dimension is fixed to."""

    name: str
    source: Path | Any
    batch_size: int = 1
    spec: str | None = None  # as ModelInput.spec


@dataclass(frozen=True)
class GenerateReport:
    models: int
    layers: int  # over every model
    sequences: int  # over every model
    unique: int  # distinct signatures among them
    new_bricks: int  # written now (the rest were in the folder already)
    # Why each new torch brick written as .pt2 (torch.export) could not be .torchfx.
    pt2_fallbacks: tuple[str, ...] = ()


def check_shape_options(batch_size: int, image_size: int | None) -> None:
    if not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise ValueError(f"batch-size: {batch_size}; accepted: 1..{MAX_BATCH_SIZE}")
    if image_size is not None and not MIN_IMAGE_SIZE <= image_size <= MAX_IMAGE_SIZE:
        raise ValueError(
            f"image-size: {image_size}; accepted: {MIN_IMAGE_SIZE}..{MAX_IMAGE_SIZE} pixels"
        )


def recipe_of(
    parsed: ParsedModel | ParsedOnnxModel,
    sequences: list[LayerSequence],
    granularity: int,
    framework: str = "torch",
) -> dict[str, Any]:
    """The model as bricks: each sequence's signature and the sequences it reads from."""
    sequence_of_layer = {i: k for k, s in enumerate(sequences) for i in s.layers}
    steps = []
    for number, sequence in enumerate(sequences):
        reads = sorted(
            {
                sequence_of_layer[p]
                for i in sequence.layers
                for p in parsed.layers[i].producers
                if sequence_of_layer[p] != number
            }
        )
        steps.append({"signature": sequence.signature, "reads": reads})
    return {
        "model": parsed.name,
        "framework": framework,
        "input_shape": parsed.input_shape,
        "granularity": granularity,
        "layers": len(parsed.layers),
        "steps": steps,
    }


class ParseCache:
    """Each model's parse, kept to cut it again at another granularity: tracing and
    recording a model's values does not depend on H. Keyed by the model object itself
    (held here, so its id cannot be given to another)."""

    def __init__(self) -> None:
        self._parsed: dict[int, tuple[Any, Any]] = {}

    def get(self, model: Any, parse: Callable[[], T]) -> T:
        held = self._parsed.get(id(model))
        if held is None or held[0] is not model:
            held = (model, parse())
            self._parsed[id(model)] = held
        parsed: T = held[1]
        return parsed


def generate_suite(
    models: Sequence[ModelInput | OnnxModelInput],
    granularity: int,
    suite: Path,
    parses: ParseCache | None = None,
) -> GenerateReport:
    """Cut every model at ``granularity`` and export each unique sequence the folder has
    no brick of. ``parses``: parses kept from an earlier call (another granularity)."""
    check_granularity(granularity)
    parses = parses or ParseCache()
    if not 1 <= len(models) <= MAX_MODELS:
        raise ValueError(f"models: {len(models)} given; accepted: 1..{MAX_MODELS} per call")
    folder = bricks_dir(suite)
    folder.mkdir(parents=True, exist_ok=True)
    layers = sequences_total = new = 0
    unique: set[str] = set()
    fallbacks: list[str] = []
    for model in models:
        framework, parsed, sequences, write = _cut(model, granularity, parses)
        layers += len(parsed.layers)
        sequences_total += len(sequences)
        for sequence in sequences:
            if sequence.signature in unique:
                continue
            unique.add(sequence.signature)
            if brick_file(suite, sequence.signature, framework) is not None:
                if isinstance(parsed, ParsedModel):
                    # A suite from before bricks kept values gets them now, so its max
                    # pools are not timed on noise under the harness that says otherwise.
                    _record_values(parsed, sequence, folder)
                continue
            fallback = write(sequence, folder)
            if fallback is not None:
                fallbacks.append(fallback)
            new += 1
        path = recipe_path(suite, model.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        recipe = recipe_of(parsed, sequences, granularity, framework)
        if model.spec is not None:
            recipe["spec"] = model.spec
        path.write_text(json.dumps(recipe, indent=1))
    return GenerateReport(len(models), layers, sequences_total, len(unique), new, tuple(fallbacks))


# Writes a brick; returns why it fell back to another format (None: it did not).
Writer = Callable[[LayerSequence, Path], str | None]


def _cut(
    model: ModelInput | OnnxModelInput, granularity: int, parses: ParseCache
) -> tuple[str, ParsedModel | ParsedOnnxModel, list[LayerSequence], Writer]:
    """The model's framework, parse, sequences, and how to write one of its bricks."""
    if isinstance(model, OnnxModelInput):
        # Imported here: a torch-only suite never loads onnx.
        from services.workloads.bricks.generate_onnx import write_onnx_brick
        from services.workloads.bricks.parse_onnx import parse_onnx
        from services.workloads.bricks.signature_onnx import cut_onnx_sequences

        onnx_model = model
        onnx_parsed = parses.get(
            model,
            lambda: parse_onnx(
                onnx_model.source, onnx_model.name, batch_size=onnx_model.batch_size
            ),
        )
        return (
            "onnx",
            onnx_parsed,
            cut_onnx_sequences(onnx_parsed, granularity),
            lambda sequence, folder: write_onnx_brick(onnx_parsed, sequence, folder),
        )
    torch_model = model
    parsed = parses.get(
        model, lambda: parse_model(torch_model.module, torch_model.example, torch_model.name)
    )
    return (
        "torch",
        parsed,
        cut_sequences(parsed, granularity),
        lambda sequence, folder: _write_brick(parsed, sequence, folder),
    )


def _write_brick(parsed: ParsedModel, sequence: LayerSequence, folder: Path) -> str | None:
    """The brick as .torchfx, checked to read back as the same modules and to run, or as
    .pt2 (torch.export) where it cannot be: then why (its module types first). A
    value-dependent brick's recorded inputs are written before it (recorded_values)."""
    module = brick_module(parsed, sequence)
    _record_values(parsed, sequence, folder)
    try:
        text = encode_brick(module)
        check_rebuilt(module, text, sequence.description, brick_output_shapes(parsed, sequence))
    except Unrebuildable as exc:
        types = sorted({type(m).__name__ for m in module.children()})
        reason = f"[{', '.join(types)}] {exc}"
        log.info("brick %s written with torch.export: %s", sequence.signature[:12], reason)
        _write_exported(parsed, sequence, module, brick_inputs(sequence.description), folder)
        return reason
    _write_last(folder, sequence, text.encode(), TORCHFX)
    return None


def _record_values(parsed: ParsedModel, sequence: LayerSequence, folder: Path) -> None:
    """The order of the values the brick's inputs held in the traced model, for a brick
    whose time depends on them and whose inputs can be recorded; a brick that has its
    values keeps them (a signature keeps the values of the model that wrote it first)."""
    if not value_dependent(sequence.description):
        return
    if values_path(folder, sequence.signature).exists():
        return
    values = [parsed.values[node.name] for node in external_inputs(parsed, sequence.layers)]
    if recordable(values):
        write_values(folder, sequence.signature, values)


def _write_exported(
    parsed: ParsedModel,
    sequence: LayerSequence,
    module: torch.fx.GraphModule,
    inputs: tuple[Any, ...],
    folder: Path,
) -> None:
    try:
        exported = torch.export.export(module, inputs)
    except Exception as exc:  # export's errors are many types; the model is named instead
        types = ", ".join(parsed.layers[i].type for i in sequence.layers)
        raise BrickError(
            f"model: {parsed.name}: the layers [{types}] cannot be exported as a brick: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        ) from exc
    buffer = io.BytesIO()
    torch.export.save(exported, buffer)
    _write_last(folder, sequence, buffer.getvalue(), ".pt2")


def _write_last(folder: Path, sequence: LayerSequence, content: bytes, suffix: str) -> None:
    """The description first, the brick last: a brick file present means its description
    is too (an interrupted write leaves a .partial, never a brick)."""
    (folder / f"{sequence.signature}.json").write_text(
        json.dumps({"signature": sequence.signature, **sequence.description}, indent=1)
    )
    partial = folder / f"{sequence.signature}.partial"
    partial.write_bytes(content)
    partial.replace(folder / f"{sequence.signature}{suffix}")
