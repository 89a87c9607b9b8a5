"""Conversion of torch manifests to ONNX: file, new manifest, cache, and the CLI command."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from typer.testing import CliRunner

import services.inference.backends.convert as convert_module
from services.core.manifest import ModelManifest, load_manifest, sha256_of, verify_model_files
from services.inference.backends.convert import (
    ConversionError,
    convert_to_onnx,
    converted_onnx,
    manifest_sha256,
)
from services.inference.backends.registry import create_backend
from tests.support.manifests import tensor_manifest

SHAPE = (1, 32, 32)


@pytest.fixture(scope="module")
def digits() -> ModelManifest:
    return tensor_manifest(
        framework="torch",
        source={"architecture": "benchstack:digits_cnn"},
        shape=SHAPE,
        name="digits",
        output_name="logits",
    )


def test_export_writes_onnx_and_a_new_manifest(digits: ModelManifest, tmp_path: Path) -> None:
    result = convert_to_onnx(digits, tmp_path)

    assert result.path == tmp_path / "digits-1.0.0.onnx"
    assert result.sha256 == sha256_of(result.path)
    new = result.manifest
    assert new.framework.name == "onnxruntime"
    assert new.source.file is not None and new.source.file.sha256 == result.sha256
    extra = new.attributes.model_dump()
    assert extra["converted_from"] == "digits:1.0.0"
    assert extra["converted_from_sha256"] == manifest_sha256(digits)
    assert extra["onnx_opset"] == 17
    # Inputs and outputs (names, shapes, steps) are carried over unchanged.
    assert new.inputs == digits.inputs and new.outputs == digits.outputs

    on_disk = load_manifest(tmp_path / "digits-1.0.0.yaml")
    assert on_disk.to_dict() == new.to_dict()
    assert verify_model_files(on_disk) == [result.path.resolve()]


def test_exported_model_has_a_dynamic_batch_and_the_manifest_names(
    digits: ModelManifest, tmp_path: Path
) -> None:
    result = convert_to_onnx(digits, tmp_path)
    graph = onnx.load(str(result.path)).graph
    assert [i.name for i in graph.input] == ["input"]
    assert [o.name for o in graph.output] == ["logits"]

    torch_backend = create_backend("torch")
    torch_backend.load(digits)
    session = ort.InferenceSession(str(result.path), providers=["CPUExecutionProvider"])
    for n in (1, 3):
        batch = np.random.default_rng(n).standard_normal((n, *SHAPE)).astype(np.float32)
        (got,) = session.run(["logits"], {"input": batch})
        expected = torch_backend.predict(batch)
        assert got.shape == (n, 10)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())


@pytest.fixture
def digits_onnx_manifest(digits: ModelManifest, tmp_path: Path) -> ModelManifest:
    return convert_to_onnx(digits, tmp_path / "first").manifest


def test_only_torch_manifests_convert(digits_onnx_manifest: ModelManifest, tmp_path: Path) -> None:
    refused = "framework.name: 'onnxruntime' manifests do not convert to ONNX; accepted: torch"
    with pytest.raises(ConversionError, match=refused):
        convert_to_onnx(digits_onnx_manifest, tmp_path)


def test_cache_is_reused_and_repaired(
    digits: ModelManifest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = converted_onnx(digits, cache_dir=tmp_path)
    assert first.path.parent.parent == tmp_path

    def must_not_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("a cached conversion was redone")

    with monkeypatch.context() as patch:
        patch.setattr(convert_module, "convert_to_onnx", must_not_run)
        again = converted_onnx(digits, cache_dir=tmp_path)
    assert again.path == first.path and again.sha256 == first.sha256

    first.path.write_bytes(b"damaged")  # the checksum no longer matches: convert again
    repaired = converted_onnx(digits, cache_dir=tmp_path)
    assert sha256_of(repaired.path) == repaired.sha256 == first.sha256


def test_cache_key_follows_content_not_location(digits: ModelManifest) -> None:
    moved = digits.model_copy(update={"base_dir": "/elsewhere"})
    assert manifest_sha256(moved) == manifest_sha256(digits)
    bumped = digits.model_copy(update={"version": "1.0.1"})
    assert manifest_sha256(bumped) != manifest_sha256(digits)


def test_cli_convert_writes_files(digits: ModelManifest, tmp_path: Path) -> None:
    from services.cli.main import app

    manifest_path = tmp_path / "digits.yaml"
    manifest_path.write_text(digits.to_yaml())
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["convert", str(manifest_path), "--to", "onnx", "--output", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert (out / "digits-1.0.0.onnx").is_file()
    assert load_manifest(out / "digits-1.0.0.yaml").framework.name == "onnxruntime"


def test_cli_refuses_an_unknown_target() -> None:
    from services.cli.main import app

    result = CliRunner().invoke(app, ["convert", "resnet18", "--to", "tflite"])
    assert result.exit_code != 0
    assert "accepted: onnx" in result.output
