"""TensorFlow backend: Keras builtins, .keras files and SavedModels, with checksums."""

from __future__ import annotations

import tarfile
from pathlib import Path

import keras
import numpy as np
import pytest

from services.core.manifest import ManifestError, ModelManifest, parse_manifest, sha256_of
from services.inference.backend_interface import BackendError
from services.inference.backends.registry import create_backend
from services.inference.backends.tensorflow.sources import (
    build_keras_application,
    savedmodel_dir_sha256,
)
from tests.support.manifests import tensor_manifest

# ResNet50 at 96x96: small enough to build in a second or two, and unlike MobileNetV2 its
# randomly initialised outputs are not a uniform 1/1000 (a seed change would be invisible).
BUILTIN = "keras:ResNet50"
IMAGE_SHAPE = (96, 96, 3)
TINY_SHAPE = (8, 8, 1)


def _batch(shape: tuple[int, ...], n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((n, *shape), dtype=np.float32)


def test_keras_builtin_predicts() -> None:
    backend = create_backend("tensorflow")
    backend.load(
        tensor_manifest(framework="tensorflow", source={"architecture": BUILTIN}, shape=IMAGE_SHAPE)
    )
    batch = _batch(IMAGE_SHAPE, n=2)
    out = backend.predict(batch)
    assert out.shape == (2, 1000)
    # Keras applications end in a softmax: each row is a probability distribution.
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-4)
    assert np.abs(out[0] - out[1]).max() > 1e-6, "two different images gave the same output"
    # One traced graph serves every batch size; a batch of one gives the same row.
    np.testing.assert_allclose(backend.predict(batch[:1]), out[:1], rtol=1e-5, atol=1e-6)
    assert BUILTIN in backend.describe()["model"]


def test_builtin_weights_follow_the_seed() -> None:
    def weights(seed: int) -> list[np.ndarray]:
        model = build_keras_application("keras:MobileNetV3Small", (32, 32, 3), seed=seed)
        return [np.asarray(w) for w in model.get_weights()]

    first, again, other = weights(0), weights(0), weights(1)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert any(not np.array_equal(a, b) for a, b in zip(first, other, strict=True))


def test_unknown_application_lists_the_known_ones() -> None:
    manifest = tensor_manifest(
        framework="tensorflow", source={"architecture": "keras:ResNet9000"}, shape=IMAGE_SHAPE
    )
    with pytest.raises(
        BackendError, match="source.architecture: keras has no model 'ResNet9000'.*MobileNetV2"
    ):
        create_backend("tensorflow").load(manifest)


def test_nchw_image_input_is_refused() -> None:
    manifest = parse_manifest(
        {
            "name": "nchw",
            "version": "1.0.0",
            "framework": {"name": "tensorflow"},
            "inputs": [{"shape": [3, 96, 96], "steps": ["decode", {"layout": {"order": "NCHW"}}]}],
            "outputs": [{}],
            "source": {"architecture": "keras:MobileNetV2"},
        }
    )
    with pytest.raises(BackendError, match="inputs\\[0\\].steps: layout NCHW.*NHWC"):
        create_backend("tensorflow").load(manifest)


@pytest.fixture(scope="module")
def tiny_model() -> keras.Model:
    keras.utils.set_random_seed(3)
    return keras.Sequential(
        [
            keras.Input(TINY_SHAPE),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(5),
        ]
    )


def _file_manifest(path: Path, sha256: str) -> ModelManifest:
    return tensor_manifest(
        framework="tensorflow",
        source={"file": {"path": path.name, "sha256": sha256}},
        shape=TINY_SHAPE,
        base_dir=path.parent,
    )


def _assert_runs_like(manifest: ModelManifest, model: keras.Model) -> None:
    backend = create_backend("tensorflow")
    backend.load(manifest)
    batch = _batch(TINY_SHAPE, n=3)
    np.testing.assert_allclose(backend.predict(batch), model(batch).numpy(), rtol=1e-5, atol=1e-6)


def test_keras_file_loads_and_a_wrong_sha256_is_refused(
    tiny_model: keras.Model, tmp_path: Path
) -> None:
    path = tmp_path / "tiny.keras"
    tiny_model.save(path)
    _assert_runs_like(_file_manifest(path, sha256_of(path)), tiny_model)

    with pytest.raises(ManifestError, match=r"source\.file\.sha256: mismatch for tiny\.keras"):
        create_backend("tensorflow").load(_file_manifest(path, "f" * 64))


@pytest.mark.usefixtures("data_dir")
def test_savedmodel_directory_and_archive(tiny_model: keras.Model, tmp_path: Path) -> None:
    folder = tmp_path / "tiny_savedmodel"
    tiny_model.export(folder, verbose=False)
    digest = savedmodel_dir_sha256(folder)
    _assert_runs_like(_file_manifest(folder, digest), tiny_model)

    archive = tmp_path / "tiny_savedmodel.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname="tiny_savedmodel")
    _assert_runs_like(_file_manifest(archive, sha256_of(archive)), tiny_model)

    # Any changed byte in any file changes the directory's sha256, and loading refuses it.
    (folder / "fingerprint.pb").write_bytes(b"edited")
    assert savedmodel_dir_sha256(folder) != digest
    with pytest.raises(ManifestError, match="SavedModel directory tiny_savedmodel"):
        create_backend("tensorflow").load(_file_manifest(folder, digest))


def test_other_file_types_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "model.h5"
    path.write_bytes(b"not a model")
    with pytest.raises(BackendError, match="source.file.path: 'model.h5'.*accepted: a .keras file"):
        create_backend("tensorflow").load(_file_manifest(path, sha256_of(path)))
