"""What a client may make the workers read: paths confined to the models and datasets folders."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from services.api.confinement import (
    MAX_DATASET_CHARS,
    confine_manifest,
    dataset_spec,
    relative_inside,
)
from services.api.rejections import Rejection
from services.core.catalogue import CATALOGUE_DIR
from services.core.manifest import ModelManifest, parse_manifest_text
from shared.settings import Settings


@pytest.mark.parametrize(
    "value", ["", "/etc", "~/x", "../up", "a/../../b", ".", "a\\b", "new\nline"]
)
def test_a_path_that_could_leave_its_folder_is_not_relative_inside(value: str) -> None:
    assert relative_inside(value) is None


def test_a_plain_relative_path_stays_as_written() -> None:
    assert relative_inside("nets/tiny.onnx") == PurePosixPath("nets/tiny.onnx")


def test_a_dataset_is_synthetic_or_a_folder_inside_the_datasets_folder(tmp_path: Path) -> None:
    settings = Settings(datasets_dir=tmp_path, environment="test")
    assert dataset_spec(settings, "synthetic") == "synthetic"
    missing = dataset_spec(settings, "imgs/val")
    assert isinstance(missing, Rejection) and str(tmp_path) not in missing.message
    assert "'imgs/val' is not a folder in the datasets folder" in missing.message
    (tmp_path / "imgs" / "val").mkdir(parents=True)
    assert dataset_spec(settings, "imgs/val") == str(tmp_path / "imgs" / "val")
    refused = dataset_spec(settings, "/")
    assert isinstance(refused, Rejection)
    assert (refused.kind, refused.field) == ("InvalidInput", "dataset")
    too_long = dataset_spec(settings, "a" * (MAX_DATASET_CHARS + 1))
    assert isinstance(too_long, Rejection) and "at most" in too_long.message


def test_a_manifests_model_file_is_anchored_in_the_models_folder(tmp_path: Path) -> None:
    settings = Settings(models_dir=tmp_path, environment="test")
    text = (
        (CATALOGUE_DIR / "resnet18.yaml")
        .read_text()
        .replace(
            "source: {architecture: 'torchvision:resnet18'}",
            f"source: {{file: {{path: nets/tiny.onnx, sha256: {'ab' * 32}}}}}",
        )
    )
    confined = confine_manifest(parse_manifest_text(text, source="t"), settings)
    assert isinstance(confined, ModelManifest)
    assert confined.source.file is not None
    assert confined.source.file.path == str(tmp_path / "nets" / "tiny.onnx")
    escaping = parse_manifest_text(text.replace("nets/tiny.onnx", "/etc/passwd"), source="t")
    refused = confine_manifest(escaping, settings)
    assert isinstance(refused, Rejection)
    assert refused.kind == "InvalidManifest" and refused.problems


def test_a_dataset_folder_linking_out_of_the_datasets_folder_is_refused(tmp_path: Path) -> None:
    # '..' is refused as text; a link is refused by where it resolves (is_dir follows it).
    shared, outside = tmp_path / "datasets", tmp_path / "host"
    (shared / "imgs").mkdir(parents=True)
    outside.mkdir()
    (shared / "link_pix").symlink_to(outside)
    (shared / "link_root").symlink_to("/")
    (shared / "link_in").symlink_to(shared / "imgs")
    settings = Settings(datasets_dir=shared, environment="test")
    for name in ("link_pix", "link_root", "link_root/usr/share"):
        refused = dataset_spec(settings, name)
        assert isinstance(refused, Rejection), name
        assert f"{name!r} leads outside the datasets folder through a link" in refused.message
        assert str(outside) not in refused.message
    assert dataset_spec(settings, "link_in") == str(shared / "link_in")
