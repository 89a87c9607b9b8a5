from __future__ import annotations

import pytest
import torch
import torchvision
from torch import nn

from services.workloads.bricks.parse import ParseError, parse_model


def test_resnet18_layers_in_topological_order_with_shapes_and_attributes() -> None:
    parsed = parse_model(torchvision.models.resnet18(), torch.randn(1, 3, 64, 64), "resnet18")
    types = [layer.type for layer in parsed.layers]
    assert types[:4] == ["Conv2d", "BatchNorm2d", "ReLU", "MaxPool2d"]
    assert types[-3:] == ["AdaptiveAvgPool2d", "flatten", "Linear"]
    assert types.count("add") == 8  # one residual add per basic block
    first = parsed.layers[0]
    assert first.input_shapes == ((1, 3, 64, 64),)
    assert first.output_shape == (1, 64, 32, 32)
    assert first.attributes["kernel_size"] == [7, 7] and first.attributes["stride"] == [2, 2]
    # Producers always come earlier: topological order.
    assert all(p < layer.index for layer in parsed.layers for p in layer.producers)
    add = next(layer for layer in parsed.layers if layer.type == "add")
    assert len(add.producers) == 2


def test_descriptions_hold_no_weights_or_node_names() -> None:
    parsed = parse_model(torchvision.models.resnet18(), torch.randn(1, 3, 64, 64))
    text = repr([layer.describe() for layer in parsed.layers])
    assert "layer1" not in text and "tensor(" not in text


class _DataDependent(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2 if x.sum() > 0 else x


def test_untraceable_model_is_refused_by_name() -> None:
    with pytest.raises(ParseError, match="model: odd cannot be traced"):
        parse_model(_DataDependent(), torch.randn(1, 3), "odd")
