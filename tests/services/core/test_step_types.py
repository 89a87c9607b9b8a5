"""A manifest's steps checked as a pipeline: each step takes what the one before gives,
refused naming the step's field, what it takes and what it got."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from services.core.catalogue import CATALOGUE_DIR, list_catalogue
from services.core.manifest import ManifestError, load_manifest, parse_manifest
from services.core.manifest_checks import check_manifest, steps_problems
from services.core.step_types import POSTPROCESS_TYPES, PREPROCESS_TYPES

TINY = Path("tests/fixtures/tiny_cnn.yaml")
IMAGENET: list[Any] = [
    {"decode": {}},
    {"resize": {"size": 256}},
    {"center_crop": {"size": 224}},
    {"normalize": {}},
    {"layout": {"order": "NCHW"}},
]


def manifest_with(steps: list[Any], outputs: list[Any] | None = None) -> Any:
    data: dict[str, Any] = yaml.safe_load(TINY.read_text())
    data["inputs"] = [{"modality": "image", "shape": [3, 224, 224], "steps": steps}]
    if outputs is not None:
        data["outputs"] = [{"modality": "classification", "steps": outputs}]
    return parse_manifest(data)


def test_every_registered_step_declares_what_it_takes_and_gives() -> None:
    from services.core.manifest_sections import PREPROCESS_STEP_NAMES

    assert set(PREPROCESS_TYPES) == set(PREPROCESS_STEP_NAMES)
    assert set(POSTPROCESS_TYPES) == {"softmax", "top_k"}


def test_every_catalogue_manifest_and_fixture_fits_together() -> None:
    manifests = [*list_catalogue(), load_manifest(TINY)]
    manifests += [load_manifest(p) for p in (CATALOGUE_DIR / "digits").glob("*.yaml")]
    assert len(manifests) > 10
    for manifest in manifests:
        assert steps_problems(manifest) == [], manifest.ref


def test_a_resize_after_normalize_names_the_step_and_the_types() -> None:
    steps = [IMAGENET[0], IMAGENET[3], IMAGENET[1], IMAGENET[2], IMAGENET[4]]
    assert steps_problems(manifest_with(steps)) == [
        "inputs[0].steps[2] (resize): takes an image (uint8, HWC), gets a tensor "
        "(float32, HWC) after normalize",
    ]


def test_two_layout_steps_are_refused() -> None:
    (problem,) = steps_problems(manifest_with([*IMAGENET, {"layout": {"order": "NHWC"}}]))
    assert problem.startswith("inputs[0].steps[5] (layout): takes an image or tensor (HWC) not")
    assert "gets a tensor (float32, CHW) after layout" in problem
    # Even two NHWC layouts, which leave the axes where they were.
    steps = [*IMAGENET[:4], {"layout": {"order": "NHWC"}}, {"layout": {"order": "NHWC"}}]
    (problem,) = steps_problems(manifest_with(steps))
    assert problem.startswith("inputs[0].steps[5] (layout):")


def test_a_cast_to_float_before_resize_is_refused_and_a_uint8_cast_is_not() -> None:
    floats = [IMAGENET[0], {"cast": {"element_type": "float32"}}, *IMAGENET[1:]]
    (problem,) = steps_problems(manifest_with(floats))
    assert problem == (
        "inputs[0].steps[2] (resize): takes an image (uint8, HWC), gets an image "
        "(float32, HWC) after cast"
    )
    bytes_ = [IMAGENET[0], {"cast": {"element_type": "uint8"}}, *IMAGENET[1:]]
    assert steps_problems(manifest_with(bytes_)) == []


def test_post_processing_after_top_k_is_refused() -> None:
    outputs: list[Any] = [{"top_k": {"k": 5}}, "softmax"]
    (problem,) = steps_problems(manifest_with(IMAGENET, outputs))
    assert problem == (
        "outputs[0].steps[1] (softmax): takes the model's scores, gets a classes (int64) "
        "after top_k"
    )
    assert steps_problems(manifest_with(IMAGENET, ["softmax", {"top_k": {"k": 5}}])) == []


def test_bench_and_validate_refuse_what_the_walk_refuses() -> None:
    steps = [IMAGENET[0], IMAGENET[4], IMAGENET[3]]
    with pytest.raises(ManifestError) as info:
        check_manifest(manifest_with(steps), hash_files=False)
    assert info.value.problems[0].startswith("inputs[0].steps[2] (normalize): takes")


@pytest.mark.parametrize(
    ("step", "where"),
    [
        ({"top_k": {"k": 100_000_000}}, "outputs[0].steps[0].top_k.k"),
        ({"top_k": {"k": 1001}}, "outputs[0].steps[0].top_k.k"),
    ],
)
def test_top_k_is_bounded(step: Any, where: str) -> None:
    with pytest.raises(ManifestError) as info:
        manifest_with(IMAGENET, [step])
    (problem,) = info.value.problems
    assert problem.startswith(where) and "1000" in problem, problem


@pytest.mark.parametrize(
    ("steps", "where"),
    [
        ([IMAGENET[0], {"resize": {"size": 70_000}}], "inputs[0].steps[1].resize.size"),
        ([IMAGENET[0], {"center_crop": {"size": [1, 10**9]}}], "inputs[0].steps[1].center_crop"),
        ([IMAGENET[0], {"normalize": {"mean": [0] * 5, "std": [1] * 5}}], "inputs[0].steps[1]"),
        ([IMAGENET[0]] + [{"cast": {}}] * 40, "inputs[0].steps"),
    ],
)
def test_step_parameters_are_bounded(steps: list[Any], where: str) -> None:
    with pytest.raises(ManifestError) as info:
        manifest_with(steps)
    assert any(p.startswith(where) for p in info.value.problems), info.value.problems
