"""A max-pooling brick is timed on the order of the values its model fed it, not on noise;
other bricks keep noise; a values file from anyone's suite is read only if it holds what
the brick's description says, within the size bound."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from services.workloads.bricks import recorded_values
from services.workloads.bricks.fx_brick import BrickFormatError
from services.workloads.bricks.generate import ModelInput, generate_suite
from services.workloads.bricks.parse import parse_model
from services.workloads.bricks.recorded_values import (
    MAX_RECORDED_BYTES,
    order_of,
    value_dependent,
    values_path,
)
from services.workloads.bricks.suite import bricks_dir, list_bricks, load_brick


def _pooling_net() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(3, stride=2),
        nn.Conv2d(8, 8, 3, padding=1),
    ).eval()


def _suite(tmp_path: Path) -> tuple[Path, nn.Sequential, torch.Tensor]:
    example = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    net = _pooling_net()
    generate_suite([ModelInput("pooling", net, example)], 1, tmp_path)
    return tmp_path, net, example


def _pool_signature(suite: Path) -> str:
    folder = bricks_dir(suite)
    found = [p.name.removesuffix(recorded_values.SUFFIX) for p in folder.glob("*.values.npz")]
    assert len(found) == 1, found
    return found[0]


def test_only_the_max_pool_brick_keeps_its_models_values(tmp_path: Path) -> None:
    suite, net, example = _suite(tmp_path)
    signature = _pool_signature(suite)
    assert len(list_bricks(suite)) == 4
    module, inputs = load_brick(suite, signature)
    # What the ReLU gave the pool in the model, as an order: the zeros stay the smallest
    # values and tie with each other, the rest keep their order.
    seen = net[1](net[0](example))
    (recorded,) = inputs
    assert torch.equal(recorded == 0, seen == 0)
    assert (recorded >= 0).all() and (recorded < 1).all()
    flat_seen, flat_recorded = seen.flatten(), recorded.flatten()
    assert torch.equal(
        torch.argsort(flat_seen, stable=True), torch.argsort(flat_recorded, stable=True)
    )
    # The pool picks the same positions from the order as from the values.
    _, where_seen = nn.functional.max_pool2d(seen, 3, 2, return_indices=True)
    _, where_recorded = nn.functional.max_pool2d(recorded, 3, 2, return_indices=True)
    assert torch.equal(where_seen, where_recorded)
    assert module(*inputs).shape == (1, 8, 7, 7)
    # The other bricks are timed on noise, as before: it has negative values.
    for other in set(list_bricks(suite)) - {signature}:
        _, noise = load_brick(suite, other)
        assert not values_path(bricks_dir(suite), other).exists()
        assert (noise[0] < 0).any()


def test_a_suite_without_values_gets_them_and_a_second_model_keeps_the_first_ones(
    tmp_path: Path,
) -> None:
    suite, net, example = _suite(tmp_path)
    signature = _pool_signature(suite)
    path = values_path(bricks_dir(suite), signature)
    first = path.read_bytes()
    path.unlink()  # as a suite generated before bricks kept values
    again = generate_suite([ModelInput("pooling", net, example)], 1, suite)
    assert again.new_bricks == 0 and path.read_bytes() == first
    # Another model with the same pool at the same shapes, fed other values.
    other = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(7))
    generate_suite([ModelInput("other", _pooling_net(), other)], 1, suite)
    assert path.read_bytes() == first


def test_the_order_keeps_ties_and_nothing_else() -> None:
    values = torch.tensor([[0.0, 5.5, 0.0], [-2.0, 5.5, 100.0]])
    assert order_of(values).tolist() == [[0.25, 0.5, 0.25], [0.0, 0.5, 0.75]]


def test_which_layers_are_value_dependent() -> None:
    parsed = parse_model(_pooling_net(), torch.randn(1, 3, 16, 16))
    kinds = {
        layer.type: value_dependent({"layers": [{"type": layer.type}]}) for layer in parsed.layers
    }
    assert kinds == {"Conv2d": False, "ReLU": False, "MaxPool2d": True}
    functional = parse_model(_FunctionalPool(), torch.randn(1, 2, 8, 8))
    assert [value_dependent({"layers": [{"type": layer.type}]}) for layer in functional.layers] == [
        False,
        True,
    ]


class _FunctionalPool(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.max_pool2d(torch.relu(x), 2)


def test_inputs_over_the_bound_are_not_recorded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The pool's input is 8x16x16 float32 = 8 KiB: a smaller bound keeps it on noise.
    monkeypatch.setattr(recorded_values, "MAX_RECORDED_BYTES", 4096)
    suite, _, _ = _suite(tmp_path)
    assert not list(bricks_dir(suite).glob("*.values.npz"))
    assert MAX_RECORDED_BYTES == 64 * 1024 * 1024


def _rewrite(path: Path, **arrays: Any) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    path.write_bytes(buffer.getvalue())


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"input0": np.zeros((1, 8, 16, 15), np.float32)}, "accepted: float32 [1, 8, 16, 16]"),
        ({"input0": np.zeros((1, 8, 16, 16), np.float64)}, "accepted: float32 [1, 8, 16, 16]"),
        ({"other": np.zeros((1, 8, 16, 16), np.float32)}, "accepted: ['input0.npy']"),
        ({"input0": np.array([object()], dtype=object)}, "accepted: float32 [1, 8, 16, 16]"),
    ],
)
def test_a_values_file_that_does_not_match_its_brick_is_refused(
    tmp_path: Path, arrays: dict[str, np.ndarray], message: str
) -> None:
    suite, _, _ = _suite(tmp_path)
    signature = _pool_signature(suite)
    _rewrite(values_path(bricks_dir(suite), signature), **arrays)
    with pytest.raises(BrickFormatError, match=f"{signature}.values.npz: .*{re.escape(message)}"):
        load_brick(suite, signature)


def test_a_values_file_that_unpacks_past_the_bound_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    suite, _, _ = _suite(tmp_path)
    signature = _pool_signature(suite)
    path = values_path(bricks_dir(suite), signature)
    # Zeros compress to almost nothing: a small file whose arrays would not be.
    buffer = io.BytesIO()
    np.savez_compressed(buffer, input0=np.zeros((1, 8, 16, 16), np.float32))
    path.write_bytes(buffer.getvalue())
    assert path.stat().st_size < 2048
    monkeypatch.setattr(recorded_values, "MAX_RECORDED_BYTES", 1024)
    # Refused from its header: its 2,048 values are never unpacked.
    with pytest.raises(BrickFormatError, match="input0 holds 2048 values; accepted: at most 256"):
        load_brick(suite, signature)
    path.write_bytes(b"not a zip")
    with pytest.raises(BrickFormatError, match="not a readable values file"):
        load_brick(suite, signature)
    assert zipfile.is_zipfile(io.BytesIO(buffer.getvalue()))


def test_an_array_shorter_than_its_header_says_is_refused(tmp_path: Path) -> None:
    suite, _, _ = _suite(tmp_path)
    signature = _pool_signature(suite)
    member = io.BytesIO()
    np.save(member, np.zeros((1, 8, 16, 16), np.float32))
    with zipfile.ZipFile(values_path(bricks_dir(suite), signature), "w") as archive:
        archive.writestr("input0.npy", member.getvalue()[:-100])
    with pytest.raises(BrickFormatError, match="input0 holds 8092 bytes of data; accepted: 8192"):
        load_brick(suite, signature)


def test_values_for_a_brick_whose_inputs_are_not_plain_shapes_are_refused(
    tmp_path: Path,
) -> None:
    suite, _, _ = _suite(tmp_path)
    signature = _pool_signature(suite)
    tupled = {"inputs": [[[1, 8, 16, 16], None]], "layers": [{"type": "MaxPool2d"}]}
    with pytest.raises(BrickFormatError, match="accepted: plain tensor shapes"):
        recorded_values.read_values(bricks_dir(suite), signature, tupled)
