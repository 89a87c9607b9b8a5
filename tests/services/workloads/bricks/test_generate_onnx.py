"""ONNX bricks: each unique sequence a standalone, valid ONNX file that runs, with fresh
weights, kept settings, and no name from the source model anywhere in bricks/."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from services.inference.backends.convert import ConvertedModel
from services.workloads.bricks.extract_onnx import brick_onnx
from services.workloads.bricks.generate import OnnxModelInput, generate_suite
from services.workloads.bricks.models import model_input, model_source, recipe_name
from services.workloads.bricks.parse_onnx import parse_onnx
from services.workloads.bricks.signature_onnx import cut_onnx_sequences
from services.workloads.bricks.suite import list_bricks, load_brick
from tests.services.workloads.bricks.onnx_models import branchy_model, names_in


@pytest.mark.parametrize("granularity", [1, 2])
def test_every_brick_runs_and_gives_its_last_layers_shape(
    tiny_onnx: ConvertedModel, tmp_path: Path, granularity: int
) -> None:
    report = generate_suite([OnnxModelInput("tiny", tiny_onnx.path, 2)], granularity, tmp_path)
    parsed = parse_onnx(tiny_onnx.path, "tiny", batch_size=2)
    sequences = {s.signature: s for s in cut_onnx_sequences(parsed, granularity)}
    assert report.unique == len(sequences)
    assert sorted(sequences) == list_bricks(tmp_path, "onnx") == list_bricks(tmp_path)
    for signature, sequence in sequences.items():
        run, inputs = load_brick(tmp_path, signature, threads=1)
        outputs = run(*inputs)
        assert outputs[-1].shape == parsed.layers[sequence.layers[-1]].output_shape
    recipe = json.loads((tmp_path / "recipes" / "tiny.json").read_text())
    assert recipe["framework"] == "onnx" and recipe["input_shape"] == [2, 1, 32, 32]
    assert len(recipe["steps"]) == report.sequences


def test_a_branchy_sequence_takes_outside_tensors_as_inputs_and_keeps_settings() -> None:
    model = branchy_model()
    parsed = parse_onnx(model, "branchy", batch_size=2)
    # H=2 over [Conv, Relu | Conv, Relu | Add, Reshape | Softmax]: Add reads a from
    # the first sequence and b from the second.
    third = cut_onnx_sequences(parsed, 2)[2]
    assert third.description["inputs"] == [[2, 4, 8, 8], [2, 4, 8, 8]]
    assert third.description["layers"][0]["reads"] == ["input:0", "input:1"]
    brick = brick_onnx(parsed, third)
    onnx.checker.check_model(brick, full_check=True)
    (shape,) = brick.graph.initializer
    assert onnx.numpy_helper.to_array(shape).tolist() == [0, -1]  # a setting, kept
    first = brick_onnx(parsed, cut_onnx_sequences(parsed, 2)[0])
    fresh = onnx.numpy_helper.to_array(first.graph.initializer[0])
    source = onnx.numpy_helper.to_array(model.graph.initializer[0])
    assert fresh.shape == source.shape and not np.allclose(fresh, source)  # a weight, redrawn


def test_the_bricks_folder_holds_no_name_of_the_source_model(tmp_path: Path) -> None:
    model = branchy_model("secret")
    generate_suite([OnnxModelInput("branchy", model, 2)], 2, tmp_path)
    generate_suite([OnnxModelInput("branchy", model, 2)], 1, tmp_path)
    names = names_in(model)
    assert len(names) > 20  # nodes, tensors, initializers, graph, docs, metadata
    files = list((tmp_path / "bricks").iterdir())
    assert any(p.suffix == ".onnx" for p in files) and any(p.suffix == ".json" for p in files)
    for path in files:
        content = path.read_bytes()
        assert b"secret" not in content, path.name  # every name above starts with it
        found = [n for n in names if n.encode() in content]
        assert not found, (path.name, found)


def test_exported_module_paths_stay_out_of_the_bricks(
    tiny_onnx: ConvertedModel, tmp_path: Path
) -> None:
    generate_suite([OnnxModelInput("tiny", tiny_onnx.path, 1)], 2, tmp_path)
    # The exporter names nodes and weights after module paths (/conv1/Conv, fc.weight).
    telling = {n for n in names_in(onnx.load(str(tiny_onnx.path))) if "/" in n or "." in n}
    assert telling
    for path in (tmp_path / "bricks").iterdir():
        content = path.read_bytes()
        assert not [n for n in telling if n.encode() in content], path.name


def test_onnx_and_torch_bricks_never_share_a_signature(
    tiny_onnx: ConvertedModel, tmp_path: Path
) -> None:
    generate_suite([model_input("tests/fixtures/tiny_cnn.yaml")], 1, tmp_path)
    torch_bricks = set(list_bricks(tmp_path, "torch"))
    generate_suite([OnnxModelInput("tiny-onnx", tiny_onnx.path, 1)], 1, tmp_path)
    onnx_bricks = set(list_bricks(tmp_path, "onnx"))
    assert torch_bricks and onnx_bricks and not torch_bricks & onnx_bricks
    assert set(list_bricks(tmp_path)) == torch_bricks | onnx_bricks


def test_onnx_files_and_onnxruntime_manifests_are_accepted(tiny_onnx: ConvertedModel) -> None:
    from_file = model_source(str(tiny_onnx.path), batch_size=2)
    assert isinstance(from_file, OnnxModelInput) and from_file.batch_size == 2
    assert recipe_name(str(tiny_onnx.path)) == from_file.name == "tiny-cnn-0.1.0"
    manifest = tiny_onnx.path.with_suffix(".yaml")  # framework onnxruntime, source.file .onnx
    from_manifest = model_source(str(manifest))
    assert isinstance(from_manifest, OnnxModelInput) and from_manifest.name == "tiny-cnn"
    with pytest.raises(ValueError, match="image-size: 64 is not accepted for the ONNX model"):
        model_source(str(tiny_onnx.path), image_size=64)
    with pytest.raises(ValueError, match="no such file; accepted: a path to an .onnx file"):
        model_source("absent.onnx")
