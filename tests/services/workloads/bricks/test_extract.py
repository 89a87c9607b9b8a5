"""A brick computes what its layers computed in the model, from its own inputs."""

from __future__ import annotations

import pytest
import torch
import torchvision

from services.workloads.bricks.extract import brick_inputs, brick_module
from services.workloads.bricks.parse import parse_model, shape_of
from services.workloads.bricks.signature import cut_sequences, external_inputs


@pytest.mark.parametrize(("name", "granularity"), [("resnet18", 1), ("shufflenet_v2_x0_5", 3)])
def test_every_unique_brick_runs_and_gives_its_last_layers_shape(
    name: str, granularity: int
) -> None:
    parsed = parse_model(torchvision.models.get_model(name), torch.randn(1, 3, 32, 32), name)
    unique = {s.signature: s for s in cut_sequences(parsed, granularity)}
    for sequence in unique.values():
        module = brick_module(parsed, sequence)
        with torch.inference_mode():
            out = module(*brick_inputs(sequence.description))
        several = isinstance(module.graph.output_node().args[0], tuple)
        last = parsed.layers[sequence.layers[-1]].output_shape
        shape = shape_of(out[-1] if several else out)  # a layer may return a tuple (chunk)
        assert shape == last, [parsed.layers[i].type for i in sequence.layers]


def test_with_the_models_weights_each_brick_reproduces_its_layers_values() -> None:
    model = torchvision.models.resnet18()
    for module in model.modules():
        if isinstance(module, torch.nn.ReLU):
            module.inplace = False  # else the recorded values are overwritten in place
    parsed = parse_model(model, torch.randn(1, 3, 32, 32), "resnet18")
    for sequence in cut_sequences(parsed, 5):
        brick = brick_module(parsed, sequence, fresh_weights=False)
        inputs = [parsed.values[n.name] for n in external_inputs(parsed, sequence.layers)]
        with torch.inference_mode():
            out = brick(*inputs)
        several = isinstance(brick.graph.output_node().args[0], tuple)
        expected = parsed.values[parsed.layers[sequence.layers[-1]].node]
        torch.testing.assert_close(out[-1] if several else out, expected)


def test_bricks_get_fresh_weights_and_neutral_names() -> None:
    model = torchvision.models.resnet18().eval()
    parsed = parse_model(model, torch.randn(1, 3, 32, 32), "resnet18")
    first = cut_sequences(parsed, 2)[0]
    brick = brick_module(parsed, first, seed=1)
    assert not torch.equal(brick.m0.weight, model.conv1.weight)
    names = [n.name for n in brick.graph.nodes]
    assert all(n.startswith(("input", "layer", "glue", "output")) for n in names), names
