"""Session fixtures shared by the backend tests: a small torch manifest and its ONNX export.

Import them into a test folder's conftest.py. (Not into tests/services/inference/backends/
itself: a conftest there puts that folder on sys.path, and its sub-folders named like
packages, triton and tensorrt, would then import as empty namespace packages, which makes
torch believe Triton is installed.)
"""

from __future__ import annotations

import pytest

from services.core.manifest import ModelManifest
from services.inference.backends.convert import ConvertedModel, converted_onnx
from tests.support.manifests import tensor_manifest

DIGITS_SHAPE = (1, 32, 32)


@pytest.fixture(scope="session")
def digits_manifest() -> ModelManifest:
    return tensor_manifest(
        framework="torch",
        source={"architecture": "benchstack:digits_cnn"},
        shape=DIGITS_SHAPE,
        name="digits",
    )


@pytest.fixture(scope="session")
def digits_onnx(
    digits_manifest: ModelManifest, tmp_path_factory: pytest.TempPathFactory
) -> ConvertedModel:
    """digits_cnn exported once per session, into a cache folder of its own."""
    return converted_onnx(digits_manifest, cache_dir=tmp_path_factory.mktemp("converted"))
