from __future__ import annotations

import pytest
import torch
import torchvision

from services.workloads.bricks.parse import parse_model
from services.workloads.bricks.signature import cut_sequences


def _parse(name: str):  # type: ignore[no-untyped-def]
    return parse_model(torchvision.models.get_model(name), torch.randn(1, 3, 64, 64), name)


def test_sequences_cover_every_layer_once_in_order() -> None:
    parsed = _parse("resnet18")
    sequences = cut_sequences(parsed, 3)
    covered = [i for s in sequences for i in s.layers]
    assert covered == list(range(len(parsed.layers)))
    assert max(len(s.layers) for s in sequences) == 3


def test_a_model_whose_branches_meet_again_is_cut_in_one_pass() -> None:
    # shufflenet's channel shuffles join branches at every unit: walking each path to
    # find what a glue node depends on never finished (the answer is now kept per node).
    parsed = _parse("shufflenet_v2_x0_5")
    sequences = cut_sequences(parsed, 4)
    assert [i for s in sequences for i in s.layers] == list(range(len(parsed.layers)))
    assert len({s.signature for s in sequences}) < len(sequences)


def test_equal_layers_share_a_signature_across_models() -> None:
    small = {s.signature for s in cut_sequences(_parse("resnet18"), 1)}
    large = {s.signature for s in cut_sequences(_parse("resnet34"), 1)}
    # resnet18's blocks are all in resnet34 at the same shapes
    assert small <= large
    assert len(small) < len(cut_sequences(_parse("resnet18"), 1))


def test_signature_depends_on_shape() -> None:
    model = torchvision.models.resnet18()
    a = cut_sequences(parse_model(model, torch.randn(1, 3, 64, 64)), 1)[0].signature
    b = cut_sequences(parse_model(model, torch.randn(1, 3, 32, 32)), 1)[0].signature
    assert a != b


def test_bad_granularity_names_the_field() -> None:
    with pytest.raises(ValueError, match="granularity: 0 is not accepted; accepted: 1.."):
        cut_sequences(_parse("resnet18"), 0)


def test_equal_concatenations_share_a_signature() -> None:
    # A cat reads a list of tensors; the list once went into its settings as node names
    # (stage2_1_branch2_7 ...), so every cat had a signature of its own. shufflenet's
    # units repeat at equal shapes: their cats are one brick.
    parsed = _parse("shufflenet_v2_x0_5")
    sequences = cut_sequences(parsed, 1)
    cats = [s for s in sequences if parsed.layers[s.layers[0]].type == "cat"]
    assert len(cats) > 10
    assert len({s.signature for s in cats}) < len(cats) / 2
    assert all(
        parsed.layers[s.layers[0]].attributes["args"][0] == ["<tensor>", "<tensor>"] for s in cats
    )
