"""The PyTorch backend: its modes agree, weights are checked and loaded safely."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
import torch

from services.core.catalogue import resolve_model
from services.core.manifest import ManifestError, ModelManifest, parse_manifest
from services.inference.backend_interface import BackendError, BackendOptions
from services.inference.backends.registry import create_backend
from services.inference.backends.torch.architectures import DigitsCNN, build_architecture

TINY = "tests/fixtures/tiny_cnn.yaml"


def _batch() -> np.ndarray:
    return np.random.default_rng(1).standard_normal((3, 1, 32, 32)).astype(np.float32)


def _predict(manifest: ModelManifest, mode: str) -> tuple[np.ndarray, dict[str, object]]:
    backend = create_backend("torch", BackendOptions(extra={"mode": mode}))
    backend.load(manifest)
    return backend.predict(_batch()), backend.describe()


def test_torchscript_matches_eager() -> None:
    manifest = resolve_model(TINY)
    eager, _ = _predict(manifest, "eager")
    scripted, info = _predict(manifest, "torchscript")
    assert eager.shape == (3, 10)
    assert info["mode"] == "torchscript"
    np.testing.assert_allclose(scripted, eager, rtol=1e-4, atol=1e-5)


def test_compile_matches_eager_or_says_why_it_fell_back() -> None:
    manifest = resolve_model(TINY)
    eager, _ = _predict(manifest, "eager")
    compiled, info = _predict(manifest, "compile")
    if "fallback" in info:
        print(f"torch.compile fell back to eager here: {info['fallback']}")
        assert str(info["fallback"]).startswith("torch.compile failed")
    np.testing.assert_allclose(compiled, eager, rtol=1e-4, atol=1e-5)


def test_random_weights_are_seeded() -> None:
    one = build_architecture("benchstack:digits_cnn").state_dict()
    two = build_architecture("benchstack:digits_cnn").state_dict()
    assert all(torch.equal(one[k], two[k]) for k in one)


def _with_weights(tmp_path: Path, sha: str | None = None) -> ModelManifest:
    torch.manual_seed(7)
    path = tmp_path / "weights.pt"
    torch.save(DigitsCNN().state_dict(), path)
    data = resolve_model(TINY).to_dict()
    digest = sha or hashlib.sha256(path.read_bytes()).hexdigest()
    data["source"] = {
        "architecture": "benchstack:digits_cnn",
        "weights": {"path": "weights.pt", "sha256": digest},
    }
    return parse_manifest(data, base_dir=str(tmp_path))


def test_weights_are_loaded_into_the_architecture(tmp_path: Path) -> None:
    random_out, _ = _predict(resolve_model(TINY), "eager")
    trained_out, _ = _predict(_with_weights(tmp_path), "eager")
    reference = DigitsCNN()
    reference.load_state_dict(torch.load(tmp_path / "weights.pt", weights_only=True))
    with torch.inference_mode():
        expected = reference.eval()(torch.from_numpy(_batch())).numpy()
    np.testing.assert_allclose(trained_out, expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(trained_out, random_out)


def test_weights_sha256_mismatch_refuses_to_load(tmp_path: Path) -> None:
    manifest = _with_weights(tmp_path, sha="0" * 64)
    with pytest.raises(ManifestError, match=r"source\.weights\.sha256: mismatch"):
        _predict(manifest, "eager")


def test_pickled_objects_in_weights_are_refused(tmp_path: Path) -> None:
    # weights_only=True: a file carrying arbitrary Python objects never executes them.
    manifest = _with_weights(tmp_path)
    path = tmp_path / "weights.pt"
    torch.save({"payload": Path("/etc/passwd")}, path)
    data = manifest.to_dict()
    data["source"]["weights"]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(BackendError, match=r"source\.weights: weights\.pt is not a plain tensor"):
        _predict(parse_manifest(data, base_dir=str(tmp_path)), "eager")


def test_bad_mode_and_architecture_name_the_field() -> None:
    with pytest.raises(BackendError, match=r"mode: 'jit' is not accepted; accepted: eager"):
        _predict(resolve_model(TINY), "jit")
    with pytest.raises(BackendError, match=r"source\.architecture: torchvision has no model"):
        build_architecture("torchvision:resnet19")
    with pytest.raises(BackendError, match=r"source\.architecture: 'keras:ResNet50' is not"):
        build_architecture("keras:ResNet50")
