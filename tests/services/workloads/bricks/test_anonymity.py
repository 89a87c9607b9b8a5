"""Signatures come from types, shapes and attributes only: over every catalogue model and
both parsers (torch.fx and ONNX), no brick description holds a node, module or tensor
name, and renaming every one of them changes no signature.

Parse and cut only (what a brick's .json file and its signature are made of); the brick
files themselves are checked end to end in test_generate.py and test_generate_onnx.py."""

from __future__ import annotations

import io
import json
import warnings
from collections.abc import Iterator
from typing import Any

import onnx
import pytest
import torch

from services.core.catalogue import list_catalogue
from services.core.manifest import ModelManifest
from services.workloads.bricks.generate import ModelInput
from services.workloads.bricks.models import manifest_model_input
from services.workloads.bricks.parse import parse_model
from services.workloads.bricks.parse_onnx import parse_onnx
from services.workloads.bricks.signature import cut_sequences
from services.workloads.bricks.signature_onnx import cut_onnx_sequences
from tests.services.workloads.bricks.onnx_models import names_in
from tests.services.workloads.bricks.renaming import MARKER, renamed_onnx, renamed_torch

# Neither parser reads a Keras model (bricks cut torch modules and ONNX graphs).
PARSED_FRAMEWORKS = {"torch"}
CATALOGUE = [m for m in list_catalogue() if m.framework.name in PARSED_FRAMEWORKS]
# Models whose input side is fixed (vit_b_16's position embedding wants 224); the others
# are cut at a small side, which changes shapes, not which names could leak.
FIXED_SIDE = {"vit_b_16"}
SMALL_SIDE = 64
GRANULARITIES = (1, 2)
# The whole file, measured on this project's 2-core machine: 31 s when idle (torch half
# 6 s, ONNX half 23 s, of which vit_b_16's dynamo export 12 s), 94 s beside another job.
# Under a minute on a quiet machine, so not marked slow.
# TorchScript's exports of these compute a Slice's bounds (shufflenet's channel split) or
# an Expand's shape (vit's class token) from Shape nodes, which onnx's shape inference
# leaves unknown, so parse_onnx refuses them; the dynamo exporter writes them as
# constants (and takes ~10 s more per model).
DYNAMO_EXPORTED = {"shufflenet_v2_x1_0", "vit_b_16"}


def test_the_catalogue_leaves_out_only_models_no_parser_reads() -> None:
    left_out = {m.name: m.framework.name for m in list_catalogue() if m not in CATALOGUE}
    assert set(left_out.values()) <= {"tensorflow"}, left_out
    assert len(CATALOGUE) >= 10  # the torch catalogue is here, not an empty parametrisation


def _model(manifest: ModelManifest) -> ModelInput:
    side = None if manifest.name in FIXED_SIDE else SMALL_SIDE
    return manifest_model_input(manifest, image_size=side)


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON document: values and keys."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _leaks(descriptions: list[dict[str, Any]], names: set[str]) -> list[str]:
    """The marker anywhere in the text, and any name standing as a string of its own."""
    found = [MARKER] if any(MARKER in json.dumps(d) for d in descriptions) else []
    return found + sorted({s for d in descriptions for s in _strings(d)} & names)


@pytest.mark.parametrize("manifest", CATALOGUE, ids=lambda m: m.name)
def test_torch_signatures_hold_no_name_and_survive_renaming(manifest: ModelManifest) -> None:
    model = _model(manifest)
    original = parse_model(model.module, model.example, manifest.name)
    renamed = parse_model(renamed_torch(model.module), model.example, manifest.name)
    nodes = [*original.module.graph.nodes, *renamed.module.graph.nodes]
    # fx names a call's first node after the function or method it calls (``add``,
    # ``dim``): such a name is a type or an argument's keyword, which a description
    # rightly holds. Numbered ones (add_3) and module paths are names of this model.
    callees = {_callee(n) for n in nodes if n.op in ("call_function", "call_method")}
    names = {n.name for n in nodes} - callees
    names |= {name for name, _ in model.module.named_modules() if name}
    for granularity in GRANULARITIES:
        before = cut_sequences(original, granularity)
        after = cut_sequences(renamed, granularity)
        assert [s.signature for s in before] == [s.signature for s in after], granularity
        leaks = _leaks([s.description for s in before + after], names)
        assert not leaks, (granularity, leaks[:5])


def _callee(node: torch.fx.Node) -> str:
    return str(getattr(node.target, "__name__", node.target))


def _onnx_of(model: ModelInput, name: str) -> onnx.ModelProto:
    """The model as torch's TorchScript exporter writes it (the one services/inference/
    convert.py uses), at batch 1; node and tensor names are the exporter's."""
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name in DYNAMO_EXPORTED:
            program = torch.onnx.export(
                model.module.eval(), (model.example,), dynamo=True, opset_version=18
            )
            assert program is not None
            return program.model_proto
        buffer = io.BytesIO()
        # Attention's fused fast path has no ONNX form; the plain one computes the same.
        fast_path = torch.backends.mha.get_fastpath_enabled()
        torch.backends.mha.set_fastpath_enabled(False)
        try:
            torch.onnx.export(
                model.module.eval(),
                (model.example,),
                buffer,
                dynamo=False,
                opset_version=17,
                input_names=["images"],
                output_names=["logits"],
            )
        finally:
            torch.backends.mha.set_fastpath_enabled(fast_path)
    return onnx.load_from_string(buffer.getvalue())


@pytest.mark.parametrize("manifest", CATALOGUE, ids=lambda m: m.name)
def test_onnx_signatures_hold_no_name_and_survive_renaming(manifest: ModelManifest) -> None:
    exported = _onnx_of(_model(manifest), manifest.name)
    original = parse_onnx(exported, manifest.name)
    other = renamed_onnx(exported)
    renamed = parse_onnx(other, manifest.name)
    assert not {n.name for n in other.graph.node} & {n.name for n in exported.graph.node}
    names = names_in(exported) - {layer.type for layer in original.layers}
    for granularity in GRANULARITIES:
        before = cut_onnx_sequences(original, granularity)
        after = cut_onnx_sequences(renamed, granularity)
        assert [s.signature for s in before] == [s.signature for s in after], granularity
        leaks = _leaks([s.description for s in before + after], names)
        assert not leaks, (granularity, leaks[:5])
