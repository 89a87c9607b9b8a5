import json
from pathlib import Path

from typer.testing import CliRunner

from services.cli.main import app


def test_train_digits_writes_a_report_without_warmup_steps(data_dir: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "train",
            "digits",
            "--steps",
            "3",
            "--batch-size",
            "8",
            "--warmup",
            "2",
            "--optimizer",
            "adam",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "images/s" in result.output
    reports = list((data_dir / "training").glob("*.json"))
    assert len(reports) == 1
    report = json.loads(reports[0].read_text())
    assert report["statistics"]["steps"] == 3
    assert report["settings"]["optimizer"] == "adam"
    assert report["settings"]["batch_size"] == 8
    assert report["statistics"]["mean_images_per_s"] > 0
    assert report["peak_rss_bytes"] > 0


def test_out_of_range_batch_size_names_the_option_and_range(data_dir: Path) -> None:
    result = CliRunner().invoke(app, ["train", "digits", "--batch-size", "0"])
    assert result.exit_code == 1
    assert "--batch-size" in result.output and "1..4096" in result.output


def test_unknown_precision_names_the_accepted_values(data_dir: Path) -> None:
    result = CliRunner().invoke(app, ["train", "digits", "--precision", "fp8"])
    assert result.exit_code == 1
    assert "--precision" in result.output and "bf16" in result.output


def _image_folder(root: Path, count: int) -> Path:
    from PIL import Image

    for index in range(count):
        folder = root / f"class{index % 2}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.new("L", (20, 24), color=index * 20).save(folder / f"{index}.png")
    return root


def test_synthetic_and_folder_side_by_side_with_ratio(data_dir: Path, tmp_path: Path) -> None:
    folder = _image_folder(tmp_path / "images", 6)
    result = CliRunner().invoke(
        app,
        [
            "train",
            "digits",
            "--steps",
            "2",
            "--warmup",
            "1",
            "--batch-size",
            "4",
            "--data",
            f"synthetic,{folder}",
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"{folder} / synthetic:" in result.output
    reports = [json.loads(p.read_text()) for p in (data_dir / "training").glob("*.json")]
    assert sorted(r["settings"]["data"] for r in reports) == sorted(["synthetic", str(folder)])


def test_missing_data_folder_names_the_option(data_dir: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["train", "digits", "--data", str(tmp_path / "absent")])
    assert result.exit_code == 1
    assert "--data" in result.output


def test_time_to_quality_reports_each_run_and_the_olympic_score(data_dir: Path) -> None:
    result = CliRunner().invoke(app, ["train", "digits", "--target-top1", "0.5", "--runs", "3"])
    assert result.exit_code == 0, result.output
    assert result.output.count("reached in") == 3
    assert "olympic score" in result.output


def test_too_few_runs_names_the_option(data_dir: Path) -> None:
    result = CliRunner().invoke(app, ["train", "digits", "--target-top1", "0.5", "--runs", "2"])
    assert result.exit_code == 1 and "--runs" in result.output
