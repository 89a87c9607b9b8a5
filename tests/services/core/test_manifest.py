from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.core.catalogue import catalogue_files, list_catalogue, resolve_model
from services.core.manifest import (
    ManifestError,
    load_manifest,
    parse_manifest,
    verify_model_files,
)


def valid() -> dict[str, Any]:
    return yaml.safe_load((Path("services/core/catalogue/resnet18.yaml")).read_text())


def test_catalogue_has_at_least_ten_valid_manifests() -> None:
    manifests = list_catalogue()
    assert len(manifests) >= 10
    assert len({m.name for m in manifests}) == len(manifests)
    for manifest in manifests:
        assert manifest.source.architecture is not None
        assert manifest.inputs[0].steps[0].op == "decode"


@pytest.mark.parametrize("path", catalogue_files(), ids=lambda p: p.stem)
def test_catalogue_manifest_round_trips(path: Path) -> None:
    manifest = load_manifest(path)
    again = parse_manifest(yaml.safe_load(manifest.to_yaml()))
    assert again.to_dict() == manifest.to_dict()


def _set(data: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    node: Any = data
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node[part]
    last = parts[-1]
    if value is _DELETE:
        del node[int(last) if last.isdigit() else last]
    elif last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value
    return data


_DELETE = object()

INVALID_CASES = [
    # (change, value, expected field path in the message, expected words)
    ("name", _DELETE, "name", "required field is missing"),
    ("framework", _DELETE, "framework", "required field is missing"),
    ("version", "1.0", "version", "not a semantic version"),
    ("version", "01.2.3", "version", "not a semantic version"),
    ("framework.name", "caffe", "framework.name", "accepted: null, onnxruntime"),
    ("framework.version", "=>2", "framework.version", "not a version constraint"),
    ("inputs.0.shape", "224", "inputs[0].shape", "tuple"),
    ("inputs.0.shape", [3, 0, 224], "inputs[0].shape", "positive"),
    (
        "inputs.0.steps.1",
        {"sharpen": {"amount": 2}},
        "inputs[0].steps[1]",
        "unknown step 'sharpen'",
    ),
    (
        "inputs.0.steps.1.resize.method",
        "cubic-ish",
        "inputs[0].steps[1].resize.method",
        "'bilinear'",
    ),
    ("inputs.0.steps.1.resize.size", -3, "inputs[0].steps[1].resize.size", "positive"),
    ("inputs.0.steps.3.normalize.std", [0.2, 0.2], "inputs[0].steps[3].normalize", "same number"),
    ("inputs.0.steps.0", {"resize": {"size": 3}}, "inputs[0]", "first step must be 'decode'"),
    ("inputs.0.element_type", "float128", "inputs[0].element_type", "'float32'"),
    ("outputs.0.steps.1.top_k.k", 0, "outputs[0].steps[1].top_k.k", "greater than or equal to 1"),
    ("source", {"file": {"path": "m.pt", "sha256": "abc"}}, "source.file.sha256", "64 lowercase"),
    ("source", {}, "source", "exactly one of 'architecture' or 'file'"),
    ("source.architecture", "resnet50", "source.architecture", "zoo:name"),
    ("attributes.top1", 140, "attributes.top1", "less than or equal to 100"),
    ("surprise", 1, "surprise", "unknown field"),
    ("inputs", [], "inputs", "at least 1"),
    ("inputs.0.steps.2.center_crop.size", 0, "inputs[0].steps[2].center_crop.size", "positive"),
    (
        "inputs.0.steps.3.normalize.scale",
        float("inf"),
        "inputs[0].steps[3].normalize.scale",
        "finite",
    ),
    (
        "inputs.0.steps.3.normalize.mean",
        [0.4, float("nan"), 0.4],
        "inputs[0].steps[3].normalize.mean[1]",
        "finite",
    ),
    ("attributes.top1", float("nan"), "attributes.top1", "finite"),
    (
        "attributes.extra",
        {"x": [1.0, float("-inf")]},
        "attributes",
        "extra.x[1]: must be a finite number",
    ),
]


@pytest.mark.parametrize(("field", "value", "path", "words"), INVALID_CASES)
def test_invalid_manifest_names_the_field(field: str, value: Any, path: str, words: str) -> None:
    data = _set(valid(), field, value)
    with pytest.raises(ManifestError) as info:
        parse_manifest(data)
    lines = info.value.problems
    assert any(line.startswith(path + ":") and words in line for line in lines), lines
    assert all("\n" not in line for line in lines)


def test_not_a_mapping_is_an_error() -> None:
    with pytest.raises(ManifestError, match="must be a YAML mapping"):
        parse_manifest(["name"])


def test_framework_alias_and_constraint() -> None:
    data = valid()
    data["framework"] = {"name": "pytorch", "version": ">=2.0,<3"}
    manifest = parse_manifest(data)
    assert manifest.framework.name == "torch"
    assert manifest.framework.accepts("2.14.1")
    assert not manifest.framework.accepts("3.0.0")
    assert not manifest.framework.accepts("1.13.0")


def _file_manifest(tmp_path: Path, content: bytes, sha: str) -> Path:
    (tmp_path / "model.pt").write_bytes(content)
    data = valid()
    data["source"] = {"file": {"path": "model.pt", "sha256": sha}}
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_sha256_of_model_file_is_checked(tmp_path: Path) -> None:
    good = hashlib.sha256(b"weights").hexdigest()
    manifest = load_manifest(_file_manifest(tmp_path, b"weights", good))
    assert verify_model_files(manifest) == [tmp_path / "model.pt"]

    bad = load_manifest(_file_manifest(tmp_path, b"tampered", good))
    with pytest.raises(ManifestError) as info:
        verify_model_files(bad)
    assert info.value.problems[0].startswith("source.file.sha256: mismatch for model.pt")


def test_missing_model_file(tmp_path: Path) -> None:
    path = _file_manifest(tmp_path, b"x", "0" * 64)
    (tmp_path / "model.pt").unlink()
    with pytest.raises(ManifestError, match="source.file.path: file not found"):
        verify_model_files(load_manifest(path))


def test_resolve_model_by_name_version_and_path() -> None:
    assert resolve_model("resnet18").name == "resnet18"
    assert resolve_model("resnet18:1.0.0").version == "1.0.0"
    assert resolve_model("services/core/catalogue/resnet50.yaml").name == "resnet50"
    with pytest.raises(ManifestError, match="not in the catalogue"):
        resolve_model("resnet19")


def test_yaml_syntax_error_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: [unclosed\n")
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    assert len(str(info.value).splitlines()) == 1
