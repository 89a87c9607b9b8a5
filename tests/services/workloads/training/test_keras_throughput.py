"""Keras training throughput (`--framework tensorflow`): tiny settings, a few seconds each.

Every Keras run trains in a spawned process (keras_throughput's docstring says why), so
this test process never imports TensorFlow; the tests check that too.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from services.workloads.training.keras_models import KERAS_MODEL_NAMES, check_keras_model
from services.workloads.training.keras_throughput import keras_batches, run_keras
from services.workloads.training.throughput import TrainingSettings

# find_spec, not importorskip: importing TensorFlow here would crash a later torchvision import.
if importlib.util.find_spec("tensorflow") is None:
    pytest.skip("Keras training needs tensorflow(-cpu) installed", allow_module_level=True)

REPO = Path(__file__).resolve().parents[4]
SETTINGS = TrainingSettings(
    model="digits",
    steps=3,
    batch_size=4,
    warmup=2,
    image_size=32,
    precision="fp32",
    optimizer="sgd",
    data="synthetic",
    threads=2,
    device="cpu",
    framework="tensorflow",
)


def jpeg_folder(root: Path, count: int) -> Path:
    """Coloured JPEGs of an odd size (resized and cropped on the way in), two classes."""
    from PIL import Image

    rng = np.random.default_rng(0)
    for index in range(count):
        folder = root / f"class{index % 2}"
        folder.mkdir(parents=True, exist_ok=True)
        pixels = rng.integers(0, 256, (40, 48, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"{index}.jpg", quality=90)
    return root


def test_bf16_adam_run_reports_measured_steps_only_with_a_standard_error() -> None:
    settings = replace(SETTINGS, precision="bf16", optimizer="adam")
    # Other tests of the suite (the TensorFlow backend's) may have imported it already.
    imported_before = "tensorflow" in sys.modules
    result = run_keras(settings)
    stats = result.statistics
    assert stats.steps == 3  # the 2 warm-up steps are run and not measured
    assert stats.images_per_s > 0 and stats.standard_error_images_per_s > 0
    assert 0 < stats.data_share < 1 and stats.jitter_images_per_s >= 0
    # The figure is batch / mean of the step times the result keeps.
    steps = result.timed.step_seconds
    assert stats.images_per_s == pytest.approx(4 * len(steps) / sum(steps))
    assert result.peak_rss_bytes > 0 and result.cuda_max_allocated_bytes is None
    recorded = result.as_dict()["settings"]
    assert (recorded["framework"], recorded["optimizer"], recorded["precision"]) == (
        "tensorflow",
        "adam",
        "bf16",
    )
    if not imported_before:
        assert "tensorflow" not in sys.modules  # trained in the child, not here


def test_folder_batches_are_preprocessed_nhwc_for_keras(tmp_path: Path) -> None:
    folder = str(jpeg_folder(tmp_path / "images", 6))
    colour = keras_batches(replace(SETTINGS, model="resnet18", data=folder))
    images, labels = colour()
    assert images.shape == (4, 32, 32, 3) and images.dtype == np.float32
    assert labels.tolist() == [0, 0, 0, 1]  # class0's three images come first, then class1's
    grey, _ = keras_batches(replace(SETTINGS, data=folder))()
    assert grey.shape == (4, 32, 32, 1)
    # Normalised by the ImageNet mean and std, not raw 0..255 pixels.
    assert -3.0 < images.min() < 0.0 < images.max() < 3.0


def test_an_image_folder_trains_beside_synthetic_with_more_data_time(tmp_path: Path) -> None:
    folder = jpeg_folder(tmp_path / "images", 6)
    synthetic = run_keras(SETTINGS).statistics
    from_folder = run_keras(replace(SETTINGS, data=str(folder))).statistics
    assert from_folder.steps == synthetic.steps == 3
    ratio = from_folder.images_per_s / synthetic.images_per_s
    assert ratio > 0
    # Decoding and resizing 4 JPEGs takes longer than drawing 4 random arrays.
    assert from_folder.data_share > synthetic.data_share


def test_unknown_model_names_what_keras_training_accepts() -> None:
    with pytest.raises(ValueError, match="MODEL: 'vit_b_16'.*digits, resnet18, resnet50"):
        check_keras_model("vit_b_16")
    assert "mobilenet_v2" in KERAS_MODEL_NAMES


def test_an_image_size_keras_applications_refuse_names_the_option() -> None:
    with pytest.raises(ValueError, match="--image-size: 16 does not fit ResNet50"):
        run_keras(replace(SETTINGS, model="resnet50", image_size=16))


def test_a_missing_folder_names_the_data_option(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--data: .*absent is not a folder"):
        run_keras(replace(SETTINGS, data=str(tmp_path / "absent")))


def test_keras_and_torch_train_resnet18_with_the_same_head_and_parameters() -> None:
    from services.workloads.training.throughput import build_model

    settings = replace(SETTINGS, model="resnet18")
    # Built in a child, as training builds it: torchvision imported after TensorFlow
    # crashes a process.
    keras_figures = subprocess.run(
        [
            sys.executable,
            "-c",
            "from services.workloads.training.keras_throughput import build_under_policy\n"
            "from services.workloads.training.throughput import TrainingSettings\n"
            f"model = build_under_policy({settings!r})\n"
            "print(model.output.shape[-1], "
            "sum(int(w.numpy().size) for w in model.trainable_weights))",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()[-2:]
    torch_model = build_model("resnet18")
    torch_count = sum(p.numel() for p in torch_model.parameters())
    assert settings.classes == 1000  # ImageNet's head, as torchvision builds it
    assert [int(v) for v in keras_figures] == [torch_model.fc.out_features, torch_count]
    assert torch_model.fc.out_features == settings.classes
