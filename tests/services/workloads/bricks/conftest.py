"""A real exported ONNX model shared by the bricks tests: the tiny CNN fixture converted by
services.inference.backends.convert (torch.onnx.export with a symbolic batch), once per session."""

from __future__ import annotations

import pytest

from services.core.manifest import load_manifest
from services.inference.backends.convert import ConvertedModel, convert_to_onnx

TINY = "tests/fixtures/tiny_cnn.yaml"


@pytest.fixture(scope="session")
def tiny_onnx(tmp_path_factory: pytest.TempPathFactory) -> ConvertedModel:
    """tiny-cnn-0.1.0.onnx and its onnxruntime manifest beside it."""
    return convert_to_onnx(load_manifest(TINY), tmp_path_factory.mktemp("tiny-onnx"))
