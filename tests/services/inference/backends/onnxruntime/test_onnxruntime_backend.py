"""ONNX Runtime backend: same outputs as PyTorch, options honoured, bad input refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from services.core.manifest import ManifestError, ModelManifest
from services.inference.backend_interface import BackendError, BackendOptions, BackendUnavailable
from services.inference.backends.convert import ConvertedModel
from services.inference.backends.registry import create_backend
from tests.support.manifests import tensor_manifest

# ONNX Runtime and PyTorch use different kernels (fused convolutions, other summation
# orders), so outputs agree to float32 rounding, not bit for bit: at most 1e-5 of the
# output's largest magnitude apart.
RELATIVE_TOLERANCE = 1e-5


def _batch(shape: tuple[int, ...], n: int = 2, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, *shape)).astype(np.float32)


def _assert_close_to_torch(manifest: ModelManifest, batch: np.ndarray, **extra: object) -> None:
    torch_backend = create_backend("torch")
    torch_backend.load(manifest)
    expected = torch_backend.predict(batch)
    # Random weights can make outputs vanish; then any tolerance would pass.
    scale = float(np.abs(expected).max())
    assert scale > 1e-3, f"reference output is degenerate (max |y| = {scale:g})"

    backend = create_backend("onnxruntime", BackendOptions(extra=dict(extra)))
    backend.load(manifest)
    got = backend.predict(batch)
    assert got.shape == expected.shape
    max_diff = float(np.abs(got - expected).max())
    arch = manifest.source.architecture
    print(f"{arch}: ORT vs torch max abs diff {max_diff:.3g} (max |y| {scale:.3g})")
    assert max_diff <= RELATIVE_TOLERANCE * scale
    assert (got.argmax(axis=1) == expected.argmax(axis=1)).all()


@pytest.mark.usefixtures("data_dir")
def test_squeezenet_matches_torch() -> None:
    manifest = tensor_manifest(
        framework="torch", source={"architecture": "torchvision:squeezenet1_0"}, shape=(3, 224, 224)
    )
    _assert_close_to_torch(manifest, _batch((3, 224, 224)))


@pytest.mark.usefixtures("data_dir")
@pytest.mark.parametrize("level", ["disable", "basic", "extended", "all"])
def test_digits_matches_torch_at_every_optimization_level(
    digits_manifest: ModelManifest, level: str
) -> None:
    _assert_close_to_torch(
        digits_manifest, _batch((1, 32, 32), n=3), graph_optimization_level=level
    )


def test_torch_manifest_is_converted_once_into_the_cache(
    data_dir: Path, digits_manifest: ModelManifest
) -> None:
    first = create_backend("onnxruntime")
    first.load(digits_manifest)
    onnx_files = list((data_dir / "converted").rglob("*.onnx"))
    assert len(onnx_files) == 1
    mtime = onnx_files[0].stat().st_mtime_ns

    second = create_backend("onnxruntime")
    second.load(digits_manifest)
    assert list((data_dir / "converted").rglob("*.onnx")) == onnx_files
    assert onnx_files[0].stat().st_mtime_ns == mtime
    assert second.describe()["converted_from"] == digits_manifest.ref


def test_onnx_file_manifest_runs_and_describe_records_settings(digits_onnx: ConvertedModel) -> None:
    options = BackendOptions(
        intra_op_threads=1, inter_op_threads=1, extra={"graph_optimization_level": "basic"}
    )
    backend = create_backend("onnxruntime", options)
    backend.load(digits_onnx.manifest)
    batch = _batch((1, 32, 32), n=4)
    out = backend.predict(batch)
    assert out.shape == (4, 10)
    # Each sample is computed on its own: a batch of one gives the same row.
    np.testing.assert_allclose(backend.predict(batch[1:2]), out[1:2], rtol=1e-5, atol=1e-6)

    info = backend.describe()
    assert info["providers"] == ["CPUExecutionProvider"]
    assert info["graph_optimization_level"] == "basic"
    assert info["intra_op_threads"] == 1
    assert info["version"] == ort.__version__
    assert info["converted_from"] == "digits:1.0.0"


def test_sha256_mismatch_is_refused(digits_onnx: ConvertedModel, tmp_path: Path) -> None:
    manifest = tensor_manifest(
        framework="onnxruntime",
        source={"file": {"path": str(digits_onnx.path), "sha256": "0" * 64}},
        shape=(1, 32, 32),
    )
    with pytest.raises(ManifestError, match=r"source\.file\.sha256: mismatch"):
        create_backend("onnxruntime").load(manifest)


def test_unknown_input_name_names_the_field(digits_onnx: ConvertedModel) -> None:
    manifest = tensor_manifest(
        framework="onnxruntime",
        source={"file": {"path": str(digits_onnx.path), "sha256": digits_onnx.sha256}},
        shape=(1, 32, 32),
        input_name="images",
    )
    with pytest.raises(BackendError, match=r"inputs\[0\]\.layer_name: 'images'.*accepted: input"):
        create_backend("onnxruntime").load(manifest)


def test_bad_optimization_level_lists_the_accepted_ones(digits_onnx: ConvertedModel) -> None:
    backend = create_backend(
        "onnxruntime", BackendOptions(extra={"graph_optimization_level": "max"})
    )
    with pytest.raises(BackendError, match="graph_optimization_level: 'max'.*disable, basic"):
        backend.load(digits_onnx.manifest)


def test_keras_architecture_is_not_something_onnxruntime_builds() -> None:
    manifest = tensor_manifest(
        framework="onnxruntime", source={"architecture": "keras:ResNet50"}, shape=(224, 224, 3)
    )
    with pytest.raises(BackendError, match="source.architecture"):
        create_backend("onnxruntime").load(manifest)


def test_framework_constraint_refuses_this_version() -> None:
    backend = create_backend("onnxruntime")
    old = tensor_manifest(
        framework="onnxruntime",
        framework_version="<1.0",
        source={"architecture": "x:y"},
        shape=(1,),
    )
    current = tensor_manifest(
        framework="onnxruntime",
        framework_version=">=1.0",
        source={"architecture": "x:y"},
        shape=(1,),
    )
    assert not old.framework.accepts(backend.version())
    assert current.framework.accepts(backend.version())


def test_cuda_without_a_cuda_build_is_unavailable(digits_onnx: ConvertedModel) -> None:
    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime has CUDA; the GPU test covers it")
    backend = create_backend("onnxruntime", BackendOptions(device="cuda"))
    with pytest.raises(BackendUnavailable, match="CUDAExecutionProvider"):
        backend.load(digits_onnx.manifest)


def test_cuda_matches_cpu(digits_onnx: ConvertedModel) -> None:
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        pytest.skip(
            "no GPU: this onnxruntime build has no CUDAExecutionProvider "
            f"(providers: {', '.join(ort.get_available_providers())})"
        )
    batch = _batch((1, 32, 32), n=2)
    cpu = create_backend("onnxruntime")
    cpu.load(digits_onnx.manifest)
    try:
        gpu = create_backend("onnxruntime", BackendOptions(device="cuda"))
        gpu.load(digits_onnx.manifest)
    except BackendUnavailable as exc:
        pytest.skip(f"no GPU: {exc}")
    assert gpu.describe()["providers"][0] == "CUDAExecutionProvider"
    np.testing.assert_allclose(gpu.predict(batch), cpu.predict(batch), rtol=1e-3, atol=1e-4)
