"""`benchstack train --framework tensorflow` through the CLI, as a user types it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from services.cli.main import app

REPO = Path(__file__).resolve().parents[4]
TINY = ["--steps", "2", "--warmup", "1", "--batch-size", "4", "--image-size", "32"]


def _jpeg_folder(root: Path, count: int) -> Path:
    from PIL import Image

    rng = np.random.default_rng(1)
    for index in range(count):
        folder = root / f"class{index % 2}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (24, 20, 3), dtype=np.uint8)).save(
            folder / f"{index}.jpg"
        )
    return root


def test_keras_digits_synthetic_and_folder_side_by_side(data_dir: Path, tmp_path: Path) -> None:
    folder = _jpeg_folder(tmp_path / "images", 6)
    keras_adam = ["--framework", "tensorflow", "--optimizer", "adam"]
    result = CliRunner().invoke(
        app, ["train", "digits", *keras_adam, *TINY, "--data", f"synthetic,{folder}"]
    )
    assert result.exit_code == 0, result.output
    assert "tensorflow digits cpu fp32 adam batch 4" in result.output
    assert f"{folder} / synthetic: images/s no interval: cannot say" in result.output
    (path,) = (data_dir / "training").glob("*.json")
    runs = json.loads(path.read_text())["runs"]
    assert [r["settings"]["data"] for r in runs] == ["synthetic", str(folder)]
    for run in runs:
        assert run["settings"]["framework"] == "tensorflow"
        assert run["settings"]["classes"] == 10  # the digits head, as torch's
        assert run["statistics"]["steps"] == 2 == len(run["step_seconds"])
        assert run["statistics"]["images_per_s"] > 0


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["digits", "--framework", "jax"], ["--framework", "torch, tensorflow"]),
        (["vit_b_16", "--framework", "tensorflow"], ["MODEL", "resnet18", "digits"]),
        (["digits", "--framework", "tensorflow", "--workers", "1,2"], ["--workers", "torch"]),
        (["digits", "--framework", "tensorflow", "--target-top1", "0.5"], ["--target-top1"]),
        (["digits", "--framework", "tensorflow", "--rank", "0"], ["--rank", "torch"]),
        (["digits", "--framework", "tensorflow", "--precision", "fp16"], ["--precision", "bf16"]),
        (["digits", "--framework", "tensorflow", "--batch-size", "5000"], ["1..4096"]),
    ],
)
def test_what_keras_training_refuses_is_named(
    data_dir: Path, arguments: list[str], expected: list[str]
) -> None:
    result = CliRunner().invoke(app, ["train", *arguments])
    assert result.exit_code == 1, result.output
    for text in expected:
        assert text in result.output
    assert not (data_dir / "training").exists()


def test_help_and_the_cli_import_leave_tensorflow_unloaded() -> None:
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from services.cli.main import app\n"
        "result = CliRunner().invoke(app, ['train', '--help'])\n"
        "assert result.exit_code == 0 and '--framework' in result.output, result.output\n"
        "print('tensorflow' in sys.modules, 'keras' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]
