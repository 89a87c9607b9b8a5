"""A suite: unique bricks once across models, recipes apart, and nothing in bricks/ that
tells which model they came from or how it is wired."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path
from typing import Any

import onnx
import pytest
import torch
import torchvision
from torch import nn

from services.workloads.bricks.generate import ModelInput, OnnxModelInput, generate_suite
from services.workloads.bricks.models import find_recipe, model_input, recipe_name
from services.workloads.bricks.parse import parse_model
from services.workloads.bricks.suite import frameworks_in, list_bricks, load_brick, read_recipe
from tests.services.workloads.bricks.renaming import MARKER, renamed_onnx, renamed_torch


def _model(name: str) -> ModelInput:
    return ModelInput(name, torchvision.models.get_model(name), torch.randn(1, 3, 32, 32))


def test_bricks_are_written_once_across_models_and_runs(tmp_path: Path) -> None:
    first = generate_suite([_model("resnet18")], 1, tmp_path)
    assert first.new_bricks == first.unique == len(list_bricks(tmp_path))
    assert first.unique < first.sequences == first.layers
    # resnet34 repeats resnet18's blocks at the same shapes: no new brick.
    second = generate_suite([_model("resnet34")], 1, tmp_path)
    assert second.new_bricks == 0 and second.unique == first.unique
    recipe = read_recipe(tmp_path, "resnet34")
    assert len(recipe["steps"]) == recipe["layers"] == second.layers
    assert all(r < n for n, step in enumerate(recipe["steps"]) for r in step["reads"])


def test_a_brick_loads_and_runs_from_the_folder_alone(tmp_path: Path) -> None:
    generate_suite([_model("resnet18")], 3, tmp_path)
    for signature in list_bricks(tmp_path)[:5]:
        module, inputs = load_brick(tmp_path, signature)
        with torch.inference_mode():
            module(*inputs)


def test_the_bricks_folder_reveals_neither_the_model_nor_its_graph(tmp_path: Path) -> None:
    model = _model("resnet18")
    generate_suite([model], 2, tmp_path)
    parsed = parse_model(model.module, model.example, "resnet18")
    # Module paths inside the model (layer1.0.conv1 -> node layer1_0_conv1) say where a
    # layer sits; generic op names (add_1) say nothing and are left out.
    telling = (
        {"resnet"}
        | {n.name for n in parsed.module.graph.nodes if n.op == "call_module" and "." in n.target}
        | {
            str(n.target)
            for n in parsed.module.graph.nodes
            if n.op == "call_module" and "." in n.target
        }
    )
    for path in (tmp_path / "bricks").iterdir():
        content = path.read_bytes()
        found = [word for word in telling if word.encode() in content]
        assert not found, (path.name, found[:5])
    description = json.loads(next((tmp_path / "bricks").glob("*.json")).read_text())
    assert set(description) == {"signature", "inputs", "layers"}


def test_models_are_named_by_catalogue_file_or_architecture() -> None:
    assert recipe_name("resnet18") == "resnet18"
    assert recipe_name("torchvision:resnet34") == "resnet34"
    assert recipe_name("tests/fixtures/tiny_cnn.yaml") == "tiny-cnn"
    tiny = model_input("tests/fixtures/tiny_cnn.yaml", batch_size=2)
    assert tuple(tiny.example.shape) == (2, 1, 32, 32)


@pytest.mark.parametrize(
    ("spec", "kwargs", "words"),
    [
        ("resnet18", {"batch_size": 0}, "batch-size: 0; accepted: 1..256"),
        ("resnet18", {"image_size": 8}, "image-size: 8; accepted: 16..1024"),
        ("torchvision:no_such_net", {}, "no_such_net"),
        ("resnet50_keras", {}, "accepted: torch models"),
    ],
)
def test_bad_model_options_name_the_option(spec: str, kwargs: dict[str, int], words: str) -> None:
    with pytest.raises(ValueError, match=words.replace(".", r"\.").replace("(", r"\(")):
        model_input(spec, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("framework", ["torch", "onnx"])
def test_no_brick_file_holds_a_name_of_a_model_with_concatenations(
    tmp_path: Path, framework: str
) -> None:
    # squeezenet's Fire modules end in a cat of two named branches, which once put their
    # node names (features_3_expand1x1_activation) into the bricks. Every module here is
    # renamed to hold a marker, so any name that gets through is found in the bytes.
    module = renamed_torch(torchvision.models.squeezenet1_1())
    example = torch.randn(1, 3, 64, 64)
    model: ModelInput | OnnxModelInput = ModelInput("squeezenet1_1", module, example)
    if framework == "onnx":
        buffer = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, (example,), buffer, dynamo=False, opset_version=17)
        model = OnnxModelInput(
            "squeezenet1_1", renamed_onnx(onnx.load_from_string(buffer.getvalue()))
        )
    report = generate_suite([model], 2, tmp_path)
    files = list((tmp_path / "bricks").iterdir())
    # A description and a brick each, and the max pools' recorded values (recorded_values).
    values = [p for p in files if p.name.endswith(".values.npz")]
    assert report.new_bricks > 5 and len(files) == 2 * report.new_bricks + len(values)
    assert framework == "onnx" or values
    for path in files:
        content = path.read_bytes()
        assert MARKER.encode() not in content, path.name
        assert b"squeezenet" not in content, path.name


def test_a_recipe_is_found_by_any_name_its_model_was_given(tmp_path: Path) -> None:
    # squeezenet1_0 is no catalogue model: its recipe's own name finds it.
    specs = ["tests/fixtures/tiny_cnn.yaml", "torchvision:squeezenet1_0"]
    models = [model_input(spec, image_size=32) for spec in specs]
    generate_suite(models, 64, tmp_path)
    for spec, name in zip(specs, ["tiny-cnn", "squeezenet1_0"], strict=True):
        recipe = find_recipe(tmp_path, spec)
        assert recipe["model"] == name and find_recipe(tmp_path, name) == recipe
    # How each was given is kept, a file by its absolute path, to build it again later.
    assert find_recipe(tmp_path, "tiny-cnn")["spec"] == str(Path(specs[0]).resolve())
    assert find_recipe(tmp_path, "squeezenet1_0")["spec"] == specs[1]
    with pytest.raises(ValueError, match="no recipe for 'alexnet'.*squeezenet1_0, tiny-cnn"):
        find_recipe(tmp_path, "alexnet")
    with pytest.raises(ValueError, match="no recipe for 'resnet18'"):
        find_recipe(tmp_path, "resnet18")  # in the catalogue, not in this suite


def test_a_model_parsed_once_is_cut_again_at_every_granularity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from services.workloads.bricks import generate

    model = _model("resnet18")
    parses = generate.ParseCache()
    parsed_names: list[str] = []
    real = generate.parse_model

    def counted(module: torch.nn.Module, example: torch.Tensor, name: str) -> Any:
        parsed_names.append(name)  # the real parse, counted
        return real(module, example, name)

    monkeypatch.setattr(generate, "parse_model", counted)
    for granularity in (1, 2):
        generate_suite([model], granularity, tmp_path / f"h{granularity}", parses)
    # Another model object of the same name is parsed afresh.
    generate_suite([_model("resnet18")], 1, tmp_path / "other", parses)
    assert parsed_names == ["resnet18", "resnet18"]
    # The kept parse cuts exactly as a fresh one does.
    fresh = tmp_path / "fresh"
    generate_suite([model], 2, fresh)
    assert read_recipe(fresh, "resnet18") == read_recipe(tmp_path / "h2", "resnet18")
    assert list_bricks(fresh) == list_bricks(tmp_path / "h2")


class _Doubling(nn.Module):
    """A module torch.fx keeps whole (it passes for one of torch.nn's) that the torchfx
    format's allow-list does not know."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2.0


_Doubling.__module__ = "torch.nn.modules.not_torchs"  # fx's test for a leaf module


def test_a_brick_torchfx_cannot_hold_is_exported_counted_and_listed_once(
    tmp_path: Path,
) -> None:
    module = nn.Sequential(nn.Conv2d(3, 4, 3), _Doubling(), nn.ReLU())
    model = ModelInput("doubling", module, torch.randn(1, 3, 16, 16))
    report = generate_suite([model], 1, tmp_path)
    assert report.new_bricks == 3
    (fallback,) = report.pt2_fallbacks
    assert "[_Doubling]" in fallback and "not_torchs._Doubling is not allowed" in fallback
    folder = tmp_path / "bricks"
    exported = [p.name.removesuffix(".pt2") for p in folder.glob("*.pt2")]
    assert len(exported) == 1 and len(list(folder.glob("*.torchfx"))) == 2
    # Both formats are torch bricks: each signature listed once, each loads and runs.
    assert len(list_bricks(tmp_path)) == len(list_bricks(tmp_path, "torch")) == 3
    assert frameworks_in(tmp_path) == ["torch"]
    for signature in list_bricks(tmp_path):
        loaded, inputs = load_brick(tmp_path, signature)
        with torch.inference_mode():
            loaded(*inputs)
        assert isinstance(loaded, torch.fx.GraphModule)
    # Generating again finds every brick, whichever its format.
    assert generate_suite([model], 1, tmp_path).new_bricks == 0


def test_a_torch_brick_in_both_formats_is_read_from_torchfx(tmp_path: Path) -> None:
    generate_suite([_model("resnet18")], 1, tmp_path)
    signature = list_bricks(tmp_path)[0]
    folder = tmp_path / "bricks"
    (folder / f"{signature}.pt2").write_bytes(b"not read")
    assert list_bricks(tmp_path).count(signature) == 1
    module, _ = load_brick(tmp_path, signature)
    assert type(module).__name__ == "Brick"
    (folder / f"{signature}.torchfx").unlink()
    with pytest.raises(Exception, match=r"\.pt2|zip|archive"):
        load_brick(tmp_path, signature)  # now the .pt2 is read, and it is no archive
