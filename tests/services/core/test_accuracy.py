"""Accuracy on the trained digits CNN: benchstack against a plain torch loop, and the errors
a damaged labels file or weights file must give."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from PIL import Image

from services.aggregator.repository import get_run
from services.campaigns.drive import run_pair
from services.core.accuracy import score
from services.core.labels import (
    LabelsError,
    TopK,
    chance_level_warning,
    class_folder_warnings,
    read_labels,
    top_k_of,
)
from services.core.manifest import load_manifest
from services.core.request import RunRequest
from services.digits.dataset import DigitsArtifacts
from services.embedded.bench import run_bench
from services.inference.backends.torch.architectures import DigitsCNN
from shared.db.session import session_scope
from shared.settings import Settings
from tests.support.cli import benchstack


def plain_torch_loop(test_dir: Path, weights: Path) -> tuple[float, dict[str, int]]:
    """Top-1 the way anyone would compute it: PIL, numpy, torch; no benchstack code."""
    model = DigitsCNN()
    model.load_state_dict(torch.load(weights, weights_only=True))
    model.eval()
    correct, total, per_class = 0, 0, {}
    for class_dir in sorted(p for p in test_dir.iterdir() if p.is_dir()):
        hits = 0
        for path in sorted(class_dir.glob("*.png")):
            with Image.open(path) as image:
                grey = image.convert("L").resize((32, 32), Image.Resampling.BILINEAR)
            x = torch.from_numpy(np.asarray(grey, dtype=np.float32) / np.float32(255.0))
            with torch.no_grad():
                predicted = int(model(x[None, None]).argmax(dim=1))
            hits += int(predicted == int(class_dir.name))
            total += 1
        per_class[class_dir.name] = hits
        correct += hits
    return 100.0 * correct / total, per_class


def test_top1_equals_plain_torch_loop(digits: DigitsArtifacts, settings: Settings) -> None:
    report = run_bench(
        RunRequest(
            model=str(digits.manifest),
            dataset=str(digits.test_dir),
            samples=None,
            batch_size=16,
            settings={"mode": "accuracy", "min_duration_s": 0.1},
        ),
        settings,
    )
    plain_top1, plain_per_class = plain_torch_loop(digits.test_dir, digits.weights)
    accuracy = report["accuracy"]
    assert accuracy["sample_count"] == sum(1 for _ in digits.test_dir.rglob("*.png"))
    assert accuracy["top1"] == plain_top1
    assert accuracy["per_class_correct"] == plain_per_class
    assert accuracy["missing_outputs"] == 0
    assert accuracy["warnings"] == []  # folders match the labels: nothing to warn about
    assert plain_top1 > 80.0  # a trained model, so equality is not two chance levels agreeing


def test_submission_stores_accuracy_and_performance_linked(
    digits: DigitsArtifacts, settings: Settings
) -> None:
    request = RunRequest(
        model=str(digits.manifest),
        dataset=str(digits.test_dir),
        samples=64,
        batch_size=8,
        settings={"min_duration_s": 0.3},
    )
    reports, verdict = run_pair(request, lambda r: run_bench(r, settings), mode_given=False)
    accuracy, performance = reports["accuracy"], reports["performance"]
    assert accuracy["mode"] == "accuracy" and accuracy["accuracy"]["top1"] > 0
    assert performance["mode"] == "performance" and performance["accuracy"] is None
    assert performance["stability"]["verdict"] in {"STABLE", "UNSTABLE", "INSUFFICIENT"}
    with session_scope(settings.effective_database_url) as session:
        for report in (accuracy, performance):
            stored = get_run(session, report["run_id"]).report["group"]
            # Linked by their group, in the stack's shape (core/campaigns/...pair.py).
            assert stored == {
                "kind": "accuracy-performance-pair",
                "id": stored["id"],
                "role": report["mode"],
            }
        assert (
            len({get_run(session, r["run_id"]).report["group"]["id"] for r in reports.values()})
            == 1
        )
    assert (verdict.accuracy_run, verdict.performance_run) == (
        accuracy["run_id"],
        performance["run_id"],
    )
    assert verdict.top1 == accuracy["accuracy"]["top1"]


def _copy_model(digits: DigitsArtifacts, target: Path) -> Path:
    for name in ("digits_cnn.yaml", "digits_cnn.pt", "labels.txt"):
        shutil.copy(digits.root / name, target / name)
    return target / "digits_cnn.yaml"


def _error_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]


def test_corrupted_labels_file_is_one_line_naming_the_field(
    digits: DigitsArtifacts, tmp_path: Path
) -> None:
    manifest = _copy_model(digits, tmp_path)
    (tmp_path / "labels.txt").write_bytes(b"0\n1\n2\n\xff\xfe\n4\n5\n6\n7\n8\n9\n")
    result = benchstack(
        tmp_path / "data", "bench", str(manifest), "--mode", "accuracy",
        "--dataset", str(digits.test_dir), "--samples", "20", "--duration", "0.1",
    )  # fmt: skip
    assert result.returncode == 1
    lines = _error_lines(result)
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: outputs[0].steps[1].labels: labels.txt is not UTF-8")


def test_duplicate_label_is_refused_before_the_run(digits: DigitsArtifacts, tmp_path: Path) -> None:
    manifest = _copy_model(digits, tmp_path)
    (tmp_path / "labels.txt").write_text("0\n1\n2\n3\n4\n4\n6\n7\n8\n9\n")
    with pytest.raises(LabelsError, match=r"steps\[1\].labels: labels.txt line 6 repeats '4'"):
        top_k_of(load_manifest(manifest))


def test_labels_count_must_match_the_model(
    digits: DigitsArtifacts, tmp_path: Path, settings: Settings
) -> None:
    manifest = _copy_model(digits, tmp_path)
    (tmp_path / "labels.txt").write_text("\n".join(str(d) for d in range(9)) + "\n")
    request = RunRequest(
        model=str(manifest),
        dataset=str(digits.test_dir),
        samples=16,
        settings={"mode": "accuracy", "min_duration_s": 0.1},
    )
    with pytest.raises(LabelsError, match="9 labels but the model outputs 10 classes"):
        run_bench(request, settings)


def test_mismatched_weights_sha256_is_one_line_naming_the_field(
    digits: DigitsArtifacts, tmp_path: Path
) -> None:
    manifest = _copy_model(digits, tmp_path)
    data = yaml.safe_load(manifest.read_text())
    data["source"]["weights"]["sha256"] = "0" * 64
    manifest.write_text(yaml.safe_dump(data))
    result = benchstack(
        tmp_path / "data", "bench", str(manifest), "--samples", "8", "--duration", "0.1"
    )
    assert result.returncode == 1
    lines = _error_lines(result)
    assert len(lines) == 1, result.stderr
    assert "source.weights.sha256: mismatch for digits_cnn.pt" in lines[0]
    assert digits.sha256 in lines[0]


def test_labels_are_matched_by_name_not_folder_order() -> None:
    # The model's classes are [cat, dog]; the dataset's sorted folders are [dog, cat]...
    top_k = TopK(k=1, labels=["zebra", "cat"], field="outputs[0].steps[0].labels")
    outputs = {0: np.array([0.1, 0.9]), 1: np.array([0.8, 0.2])}
    # ...sample 0 is in folder 'cat' (sorted index 0), sample 1 in 'zebra' (index 1).
    report = score(outputs, [0, 1], top_k, class_names=["cat", "zebra"])
    assert report.top1 == 100.0
    assert report.top5 is None  # k=1 in the manifest: no top-5 claimed


def test_missing_outputs_count_as_wrong() -> None:
    top_k = TopK(k=5, labels=None, field="outputs[0].steps[0].labels")
    outputs = {0: np.eye(10)[3], 2: np.eye(10)[5]}
    report = score(outputs, [3, 4, 5, None], top_k)
    assert report.sample_count == 3 and report.missing_outputs == 1
    assert report.top1 == pytest.approx(200 / 3)


def test_unknown_class_folder_names_the_labels_field() -> None:
    top_k = TopK(k=5, labels=["0", "1"], field="outputs[0].steps[1].labels")
    with pytest.raises(LabelsError, match=r"dataset: class folder 'seven' is not a label in"):
        score({0: np.zeros(2)}, [0], top_k, class_names=["seven"])


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "is empty"),
        (b"a\n\nb\n", "line 2 is blank"),
        (b"a\nb\x00c\n", "line 2 holds control characters"),
    ],
)
def test_read_labels_rejects_damage(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "labels.txt"
    path.write_bytes(content)
    with pytest.raises(LabelsError, match=expected) as info:
        read_labels(path, "outputs[0].steps[1].labels")
    assert str(info.value).startswith("outputs[0].steps[1].labels: ")


def test_class_folders_that_cannot_be_the_models_classes_are_warned_about() -> None:
    no_file = TopK(k=5, labels=None, field="outputs[0].steps[1].labels")
    # A subset of the classes: folder '3' is scored as class 0, '5' as 1, '7' as 2.
    subset = class_folder_warnings(["3", "5", "7"], no_file, output_classes=10)
    assert len(subset) == 2
    assert subset[0].startswith("dataset: 3 class folders but the model outputs 10 classes")
    assert "'3' as class 0, '5' as class 1, '7' as class 2" in subset[1]
    assert all("outputs[0].steps[1].labels" in w for w in subset)
    # Eleven numbered folders sort as text: '10' lands at index 2.
    eleven = [str(i) for i in range(11)]
    text_sorted = class_folder_warnings(sorted(eleven), no_file, output_classes=11)
    assert text_sorted == [
        "dataset: class folders named by number are scored by sorted position: "
        "'10' as class 2, '2' as class 3, '3' as class 4 and 6 more; name a labels file in "
        "outputs[0].steps[1].labels so folders are matched by name"
    ]
    # The right folders, in order: no warning. With a labels file names are matched.
    assert class_folder_warnings([str(i) for i in range(10)], no_file, output_classes=10) == []
    by_name = TopK(k=5, labels=["cat", "dog"], field="outputs[0].steps[0].labels")
    assert class_folder_warnings(["dog"], by_name, output_classes=2) == []


def test_chance_level_top1_is_warned_about() -> None:
    warning = chance_level_warning(0.0, classes=10, samples=300)
    assert warning is not None and warning.startswith("accuracy: top-1 0.00 % is at or below")
    assert chance_level_warning(10.0, classes=10, samples=300) is not None  # exactly chance
    assert chance_level_warning(10.5, classes=10, samples=300) is None
    assert chance_level_warning(0.0, classes=10, samples=5) is None  # too few to tell


def test_a_subset_of_classes_without_labels_file_warns_in_report_and_cli(
    digits: DigitsArtifacts, tmp_path: Path
) -> None:
    manifest = _copy_model(digits, tmp_path)
    data = yaml.safe_load(manifest.read_text())
    data["outputs"][0]["steps"][1]["top_k"].pop("labels")  # scored by sorted folder index
    manifest.write_text(yaml.safe_dump(data))
    dataset = tmp_path / "three-digits"
    for name in ("3", "5", "7"):
        shutil.copytree(digits.test_dir / name, dataset / name)
    result = benchstack(
        tmp_path / "data", "bench", str(manifest), "--mode", "accuracy", "--dataset",
        str(dataset), "--samples", "1000", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    accuracy = json.loads(result.stdout)["accuracy"]
    # Folder '3' is scored as class 0 and so on: a trained model scores (almost) nothing.
    assert accuracy["top1"] < 10.0
    warnings = accuracy["warnings"]
    assert warnings[0].startswith("dataset: 3 class folders but the model outputs 10 classes")
    assert any("'3' as class 0" in w for w in warnings)
    assert any(w.startswith("accuracy: top-1") for w in warnings)
    printed = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert printed == [f"warning: {w}" for w in warnings]
