"""check_manifest: shapes worked out from the steps, files kept inside the manifest's folder."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.core.catalogue import list_catalogue
from services.core.manifest import ManifestError, ModelManifest, load_manifest, parse_manifest
from services.core.manifest_checks import (
    check_manifest,
    produced_shape,
    shape_problems,
    steps_problems,
)

TINY = Path("tests/fixtures/tiny_cnn.yaml")


def tiny(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(TINY.read_text())
    data.update(changes)
    return data


def write(folder: Path, data: dict[str, Any], name: str = "m.yaml") -> ModelManifest:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump(data))
    return load_manifest(path)


def problems_of(manifest: ModelManifest, *, hash_files: bool = True) -> list[str]:
    with pytest.raises(ManifestError) as info:
        check_manifest(manifest, hash_files=hash_files)
    return info.value.problems


def with_steps(shape: list[int], steps: list[Any]) -> ModelManifest:
    inputs = [{"modality": "image", "shape": shape, "steps": steps}]
    return parse_manifest(tiny(inputs=inputs))


def test_every_catalogue_manifest_produces_its_declared_shape() -> None:
    for manifest in list_catalogue():
        assert shape_problems(manifest) == [], manifest.ref


def test_imagenet_steps_work_out_to_chw_and_hwc() -> None:
    steps: list[Any] = [
        {"decode": {}},
        {"resize": {"size": 256}},
        {"center_crop": {"size": 224}},
        {"normalize": {}},
    ]
    nchw = with_steps([3, 224, 224], [*steps, {"layout": {"order": "NCHW"}}])
    assert produced_shape(nchw.inputs[0]) == ((3, 224, 224), [])
    # Without a layout step the pipeline leaves the batch NHWC.
    assert produced_shape(with_steps([224, 224, 3], steps).inputs[0]) == ((224, 224, 3), [])


def test_layout_mismatch_names_the_shape_field_and_what_the_steps_give() -> None:
    manifest = parse_manifest(tiny(inputs=[{**tiny()["inputs"][0], "shape": [32, 32, 1]}]))
    (problem,) = shape_problems(manifest)
    assert problem.startswith("inputs[0].shape: the steps produce (1, 32, 32) per sample")
    assert "the manifest says (32, 32, 1)" in problem


def test_aspect_keeping_resize_alone_leaves_sides_unknown_but_channels_checked() -> None:
    steps: list[Any] = [{"decode": {"color_mode": "L"}}, {"resize": {"size": 64}}, "layout"]
    assert produced_shape(with_steps([1, 64, 80], steps).inputs[0])[0] == (1, None, None)
    assert shape_problems(with_steps([1, 64, 80], steps)) == []
    (problem,) = shape_problems(with_steps([3, 64, 80], steps))
    assert "produce (1, ?, ?)" in problem


@pytest.mark.parametrize(
    ("steps", "words"),
    [
        (
            [{"decode": {}}, {"resize": {"size": [16, 16]}}, {"center_crop": {"size": 32}}],
            "inputs[0].steps[2]: center_crop of 32x32 is larger than the 16x16 image",
        ),
        (
            [{"decode": {"color_mode": "L"}}, {"normalize": {}}],
            "inputs[0].steps[1]: normalize has 3 mean values for 1 channel(s)",
        ),
        (
            [{"decode": {}}, "layout", {"resize": {"size": [32, 32]}}],
            "inputs[0].steps[2] (resize): takes an image (uint8, HWC), gets a tensor "
            "(uint8, CHW) after layout",
        ),
    ],
)
def test_steps_out_of_place_are_named(steps: list[Any], words: str) -> None:
    problems = steps_problems(with_steps([3, 32, 32], steps))
    assert any(p.startswith(words) for p in problems), problems


@pytest.mark.parametrize(
    ("field", "written"),
    [
        ("weights", "../../../../etc/passwd"),
        ("weights", "/etc/passwd"),
        ("weights", "~/weights.pt"),
        ("file", "sub/../../outside.pt"),
    ],
)
def test_paths_leaving_the_folder_are_refused(tmp_path: Path, field: str, written: str) -> None:
    source: dict[str, Any] = {field: {"path": written, "sha256": "0" * 64}}
    if field == "weights":
        source["architecture"] = "benchstack:digits_cnn"
    manifest = write(tmp_path / "models", tiny(source=source))
    (problem,) = problems_of(manifest)
    assert problem == (
        f"source.{field}.path: {written!r} is not accepted; accepted: a path relative to the "
        f"manifest's folder ({tmp_path / 'models'}) without '..'"
    )


def test_a_symbolic_link_out_of_the_folder_is_refused_before_hashing(tmp_path: Path) -> None:
    outside = tmp_path / "secret.bin"
    outside.write_bytes(b"not yours to hash")
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "model.pt").symlink_to(outside)
    manifest = write(folder, tiny(source={"file": {"path": "model.pt", "sha256": "0" * 64}}))
    (problem,) = problems_of(manifest)
    assert problem.startswith("source.file.path: 'model.pt' leads outside the manifest's folder")
    # The refusal comes before any read: the outside file's digest is nowhere in it.
    assert hashlib.sha256(outside.read_bytes()).hexdigest() not in problem


def test_a_symbolic_link_inside_the_folder_is_followed(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    (folder / "store").mkdir(parents=True)
    (folder / "store" / "w.pt").write_bytes(b"weights")
    (folder / "model.pt").symlink_to(folder / "store" / "w.pt")
    digest = hashlib.sha256(b"weights").hexdigest()
    manifest = write(folder, tiny(source={"file": {"path": "model.pt", "sha256": digest}}))
    assert check_manifest(manifest).checked_files == [folder / "store" / "w.pt"]


def test_labels_files_are_confined_and_must_exist(tmp_path: Path) -> None:
    outputs = [{"modality": "classification", "steps": [{"top_k": {"labels": "../labels.txt"}}]}]
    manifest = write(tmp_path / "models", tiny(outputs=outputs))
    (problem,) = problems_of(manifest)
    assert problem.startswith("outputs[0].steps[0].labels: '../labels.txt' is not accepted")

    outputs[0]["steps"] = [{"top_k": {"labels": "labels.txt"}}]
    missing = write(tmp_path / "models", tiny(outputs=outputs))
    (problem,) = problems_of(missing)
    assert problem.startswith("outputs[0].steps[0].labels: labels file not found")


def test_unknown_architecture_and_every_fault_at_once(tmp_path: Path) -> None:
    data = tiny(source={"architecture": "torchvision:resnet19"})
    data["inputs"][0]["shape"] = [3, 32, 32]
    problems = problems_of(write(tmp_path, data))
    assert problems[0].startswith("inputs[0].shape: the steps produce (1, 32, 32)")
    assert problems[1].startswith("source.architecture: torchvision has no model 'resnet19'")
    assert "did you mean resnet18" in problems[1]


def test_hash_files_false_checks_everything_but_the_digest(tmp_path: Path) -> None:
    (tmp_path / "model.pt").write_bytes(b"weights")
    manifest = write(tmp_path, tiny(source={"file": {"path": "model.pt", "sha256": "0" * 64}}))
    assert check_manifest(manifest, hash_files=False).checked_files == []
    (problem,) = problems_of(manifest)
    assert problem.startswith("source.file.sha256: mismatch for model.pt")
