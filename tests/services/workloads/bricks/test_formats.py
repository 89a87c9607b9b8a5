"""The brick formats table (bricks/formats.py): each format's runtime is a backend's name,
its system key names that runtime, and its empty brick runs."""

from __future__ import annotations

import platform
import re

import onnxruntime
import pytest
import torch

from services.inference.backends import registry
from services.workloads.bricks.formats import FORMATS, brick_format
from services.workloads.bricks.measure import HARNESS, system_key
from services.workloads.bricks.suite import BRICK_SUFFIXES


def test_each_format_runs_on_a_registered_backend() -> None:
    assert {name: brick.runtime for name, brick in FORMATS.items()} == {
        "torch": "torch",
        "onnx": "onnxruntime",  # the format keeps its stored name; the runtime is the backend's
    }
    assert {brick.runtime for brick in FORMATS.values()} <= set(registry.backend_names())
    assert BRICK_SUFFIXES == {"torch": (".torchfx", ".pt2"), "onnx": (".onnx",)}


def test_the_system_key_names_the_runtime_and_its_version() -> None:
    node = re.sub(r"[^A-Za-z0-9._-]", "_", platform.node())
    onnx_key = f"{node}-onnxruntime{onnxruntime.__version__}-cpu-tdefault-{HARNESS}"
    assert system_key(0, "onnx") == re.sub(r"[^A-Za-z0-9._-]", "_", onnx_key)
    torch_key = f"{node}-torch{torch.__version__}-cpu-t3-{HARNESS}"
    assert system_key(3, "torch") == re.sub(r"[^A-Za-z0-9._-]", "_", torch_key)
    with pytest.raises(ValueError, match="framework: 'onnxruntime'; accepted: torch, onnx"):
        system_key(1, "onnxruntime")  # a backend's name is not a brick format's


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_each_formats_empty_brick_runs(name: str) -> None:
    brick = brick_format(name)
    call, inputs = brick.call(brick.empty_brick, 1)
    call(*inputs)
    assert brick.cold_weights == (name == "torch")  # torch modules' weights only
