"""TensorRT backend: imports anywhere, says why it cannot run, and matches ONNX Runtime on a GPU."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, distribution

import numpy as np
import pytest

from services.inference.backend_interface import BackendError, BackendOptions, BackendUnavailable
from services.inference.backends.convert import ConvertedModel
from services.inference.backends.registry import create_backend


def _tensorrt_installed() -> bool:
    # The distribution, not find_spec: a folder named tensorrt on sys.path is not TensorRT.
    try:
        distribution("tensorrt")
    except PackageNotFoundError:
        return False
    return True


def _gpu_reason() -> str:
    """Why the GPU test cannot run here, or "" when it can."""
    if not _tensorrt_installed():
        return "the tensorrt package is not installed"
    import torch

    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    return ""


def test_module_imports_without_tensorrt() -> None:
    backend = create_backend("tensorrt")
    assert backend.name == "tensorrt"


def test_cpu_device_is_refused_with_the_reason(digits_onnx: ConvertedModel) -> None:
    backend = create_backend("tensorrt", BackendOptions(device="cpu"))
    with pytest.raises(
        BackendUnavailable, match="device: TensorRT runs only on NVIDIA GPUs; got 'cpu'"
    ):
        backend.load(digits_onnx.manifest)


def test_a_precision_it_does_not_build_is_refused_naming_the_accepted_ones(
    digits_onnx: ConvertedModel,
) -> None:
    backend = create_backend("tensorrt", BackendOptions(device="cuda", extra={"precision": "INT8"}))
    with pytest.raises(
        BackendError, match="precision: 'int8' is not accepted; accepted: fp32, fp16"
    ):
        backend.load(digits_onnx.manifest)


def test_missing_tensorrt_is_named(digits_onnx: ConvertedModel) -> None:
    if _tensorrt_installed():
        pytest.skip("tensorrt is installed; the GPU test covers this machine")
    backend = create_backend("tensorrt", BackendOptions(device="cuda"))
    with pytest.raises(BackendUnavailable, match="tensorrt: the Python package is not installed"):
        backend.load(digits_onnx.manifest)
    with pytest.raises(BackendUnavailable, match="tensorrt"):
        backend.version()


@pytest.mark.usefixtures("data_dir")
def test_engine_matches_onnxruntime(digits_onnx: ConvertedModel) -> None:
    reason = _gpu_reason()
    if reason:
        pytest.skip(f"no GPU: {reason}")
    batch = np.random.default_rng(0).standard_normal((3, 1, 32, 32)).astype(np.float32)
    reference = create_backend("onnxruntime")
    reference.load(digits_onnx.manifest)
    backend = create_backend("tensorrt", BackendOptions(device="cuda", extra={"max_batch_size": 8}))
    backend.load(digits_onnx.manifest)
    expected = reference.predict(batch)
    got = backend.predict(batch)
    # TensorRT may pick TF32 or other kernels for FP32: agree to 1e-3 of the largest output.
    assert got.shape == expected.shape
    assert np.abs(got - expected).max() <= 1e-3 * np.abs(expected).max()
    assert backend.describe()["precision"] == "fp32"
