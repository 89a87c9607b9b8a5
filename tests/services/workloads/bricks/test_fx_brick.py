"""The torchfx brick format: bricks of real models written and read back the same, and a
file naming anything outside the allow-list refused with that name."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
import torchvision
from torch import fx, nn

from services.workloads.bricks.extract import brick_inputs, brick_module, brick_output_shapes
from services.workloads.bricks.fx_brick import (
    BrickFormatError,
    check_rebuilt,
    decode_brick,
    encode_brick,
)
from services.workloads.bricks.fx_modules import Unrebuildable
from services.workloads.bricks.parse import ParsedModel, parse_model, shape_of
from services.workloads.bricks.signature import LayerSequence, cut_sequences

# Small inputs keep the file quick; vit_b_16 is built for its side (4 patches of 16).
MODELS = {
    "resnet18": 32,
    "mobilenet_v3_small": 32,
    "vit_b_16": 32,
    "shufflenet_v2_x1_0": 32,
    "efficientnet_b0": 32,
    "convnext_tiny": 32,
}
# Modules whose fresh weights extract draws otherwise than their constructor does:
# extract calls ``reset_parameters`` where a module has one and draws N(0, 0.02) where it
# has none; MultiheadAttention has only ``_reset_parameters`` (xavier), which its
# constructor calls. Bricks holding one compare by shape only.
OTHER_DRAWS = (nn.MultiheadAttention,)


def _parsed(name: str, side: int) -> ParsedModel:
    kwargs: dict[str, Any] = {"image_size": side} if name.startswith("vit") else {}
    model = torchvision.models.get_model(name, **kwargs)
    return parse_model(model, torch.randn(1, 3, side, side), name)


def _unique(parsed: ParsedModel) -> list[LayerSequence]:
    found: dict[str, LayerSequence] = {}
    for granularity in (1, 3):
        for sequence in cut_sequences(parsed, granularity):
            found.setdefault(sequence.signature, sequence)
    return list(found.values())


@pytest.mark.parametrize(("name", "side"), MODELS.items(), ids=list(MODELS))
def test_bricks_of_real_models_read_back_as_they_were_written(name: str, side: int) -> None:
    parsed = _parsed(name, side)
    sequences = _unique(parsed)
    assert len(sequences) > 5
    for sequence in sequences:
        module = brick_module(parsed, sequence)
        text = encode_brick(module)
        expected = brick_output_shapes(parsed, sequence)
        check_rebuilt(module, text, sequence.description, expected)
        loaded = decode_brick(text)  # seeded as brick_module was: the same draws
        # Inputs drawn for each call: an in-place layer (ReLU(inplace=True)) changes them.
        with torch.inference_mode():
            before = module(*brick_inputs(sequence.description))
            after = loaded(*brick_inputs(sequence.description))
        assert shape_of(after) == shape_of(before) == expected, sequence.description["layers"]
        if not any(isinstance(m, OTHER_DRAWS) for m in module.modules()):
            for one, other in zip(_tensors(before), _tensors(after), strict=True):
                assert torch.equal(one, other), sequence.description["layers"]
        assert [str(n.target) for n in loaded.graph.nodes if n.op == "call_method"] == [
            str(n.target) for n in module.graph.nodes if n.op == "call_method"
        ]


def _tensors(value: Any) -> list[torch.Tensor]:
    return [v for v in torch.utils._pytree.tree_leaves(value) if isinstance(v, torch.Tensor)]


def _brick_text() -> str:
    """A small brick: conv, flatten (a function), view (a method), add, one slice."""

    class Small(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.flatten(self.conv(x), 1)
            return y.view(1, -1)[:, 0:8] + 1.0

    traced = fx.symbolic_trace(Small().eval())
    return encode_brick(traced)


def test_a_small_brick_reads_back_and_computes() -> None:
    text = _brick_text()
    document = json.loads(text)
    assert document["modules"]["conv"] == {
        "class": "torch.nn.Conv2d",
        "kwargs": {
            "in_channels": 3,
            "out_channels": 4,
            "kernel_size": {"tuple": [3, 3]},
            "stride": {"tuple": [1, 1]},
            "padding": {"tuple": [1, 1]},
            "dilation": {"tuple": [1, 1]},
            "groups": 1,
            "bias": False,
            "padding_mode": "zeros",
        },
    }
    module = decode_brick(text)
    assert not module.training and module.conv.bias is None
    with torch.inference_mode():
        assert module(torch.randn(1, 3, 4, 4)).shape == (1, 8)
    # Read twice, drawn the same: the seed is the format's, not the caller's state.
    assert torch.equal(module.conv.weight, decode_brick(text).conv.weight)


def _with_target(text: str, old: str, new: str) -> str:
    assert f'"{old}"' in text
    return text.replace(f'"{old}"', f'"{new}"')


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("torch.flatten", "os.system", "function: 'os.system' is not allowed"),
        ("torch.flatten", "builtins.eval", "function: 'builtins.eval' is not allowed"),
        ("torch.flatten", "torch.load", "function: 'torch.load' is not allowed"),
        ("torch.flatten", "torch.from_file", "function: 'torch.from_file' is not allowed"),
        ("torch.flatten", "operator.call", "function: 'operator.call' is not allowed"),
        ("torch.flatten", "torch.nn.functional.torch", "'torch.nn.functional.torch' is not"),
        ("view", "__reduce_ex__", "method '__reduce_ex__' is not allowed"),
        ("view", "numpy", "method 'numpy' is not allowed"),
        ("view", "apply_", "method 'apply_' is not allowed"),
        ("torch.nn.Conv2d", "subprocess.Popen", "class: 'subprocess.Popen' is not allowed"),
        ("torch.nn.Conv2d", "torch.nn.functional", "class: 'torch.nn.functional' is not"),
        ("torch.nn.Conv2d", "torch.nn.init", "class: 'torch.nn.init' is not allowed"),
    ],
)
def test_a_file_naming_anything_outside_the_allow_list_is_refused(
    old: str, new: str, words: str
) -> None:
    with pytest.raises(BrickFormatError, match=words.replace(".", r"\.")):
        decode_brick(_with_target(_brick_text(), old, new))


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: d.update(format="pickle"), "format is not benchstack-torchfx"),
        (lambda d: d["nodes"][1]["args"].__setitem__(0, {"node": "nope"}), "'nope' is read"),
        (lambda d: d["nodes"][1].update(op="get_attr"), "op 'get_attr'; accepted"),
        (lambda d: d["nodes"][1]["args"].append({"pickle": "x"}), "one of the tags node"),
        (lambda d: d["nodes"].reverse(), "the last node, and only it, is the output"),
        (lambda d: d["nodes"][1].update(name="a.b"), "name 'a.b' is not a new identifier"),
        (lambda d: d["nodes"][1].update(target="elsewhere"), "module 'elsewhere' is not"),
        # Names fx writes into the forward it generates: never code.
        (lambda d: d["nodes"][1].update(name="lambda"), "name 'lambda' is not a new"),
        (
            lambda d: d["nodes"][2].update(kwargs={"x=1); import os; (y": 1}),
            "node 2: a keyword argument is not an identifier",
        ),
        (lambda d: d["nodes"][1]["args"].append(json.loads("[" * 20 + "]" * 20)), "deeper"),
        (
            lambda d: d["modules"]["conv"]["kwargs"].update(in_channels=10**6, out_channels=10**4),
            "weights; accepted: at most",
        ),
        (
            lambda d: d["modules"]["conv"]["kwargs"].update(size=3),
            "module torch.nn.Conv2d: cannot be built",
        ),
    ],
)
def test_a_malformed_file_is_refused_with_what_is_wrong(change: Any, words: str) -> None:
    document = json.loads(_brick_text())
    change(document)
    with pytest.raises(BrickFormatError, match=words.replace(".", r"\.")):
        decode_brick(json.dumps(document))


def test_a_module_its_constructor_cannot_rebuild_is_found_at_write_time() -> None:
    # A Linear whose weight was swapped for another shape: its attributes rebuild a
    # Linear that prints the same but holds other weights.
    linear = nn.Linear(4, 8)
    linear.weight = nn.Parameter(torch.randn(8, 6))
    root = nn.Module()
    root.add_module("m0", linear)
    graph = fx.Graph()
    graph.output(graph.call_module("m0", (graph.placeholder("input0"),)))
    traced = fx.GraphModule(root, graph).eval()
    text = encode_brick(traced)
    with pytest.raises(Unrebuildable, match="parameters"):
        check_rebuilt(traced, text, {"inputs": [[1, 6]]}, (1, 8))

    class Custom(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * 2

    root.m0 = Custom()
    with pytest.raises(Unrebuildable, match="Custom is not allowed"):
        encode_brick(fx.GraphModule(root, graph))
