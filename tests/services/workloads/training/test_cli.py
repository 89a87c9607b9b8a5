import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from services.cli.main import app
from services.workloads.training.scaling import free_port


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
    assert "images/s" in result.output and "host: " in result.output
    reports = list((data_dir / "training").glob("*.json"))
    assert len(reports) == 1
    report = json.loads(reports[0].read_text())
    (run,) = report["runs"]
    assert run["statistics"]["steps"] == 3 == len(run["step_seconds"])
    assert run["settings"]["optimizer"] == "adam"
    assert run["settings"]["batch_size"] == 8
    assert run["peak_rss_bytes"] > 0
    assert isinstance(run["host"]["busy"], bool) and report["host"]["exclusive"]
    # What is printed is batch / the mean of the stored step times.
    images_per_s = 8 * len(run["step_seconds"]) / sum(run["step_seconds"])
    assert run["statistics"]["images_per_s"] == pytest.approx(images_per_s)
    assert f"images/s {images_per_s:.1f} ± " in result.output
    assert report["comparisons"] == []  # one arm: nothing to compare


def test_progress_lines_every_n_steps_as_tf_cnn_benchmarks_prints(data_dir: Path) -> None:
    command = ["train", "digits", "--steps", "4", "--warmup", "1", "--batch-size", "4"]
    result = CliRunner().invoke(app, [*command, "--display-every", "2"])
    assert result.exit_code == 0, result.output
    lines = [line.split("\t") for line in result.output.splitlines() if "\timages/s: " in line]
    assert [line[0].strip() for line in lines] == ["2", "4"]
    assert "jitter = " in lines[0][1] and lines[0][2].startswith("loss ")


def test_repeats_out_of_range_name_the_option(data_dir: Path) -> None:
    result = CliRunner().invoke(app, ["train", "digits", "--repeats", "0"])
    assert result.exit_code == 1 and "--repeats" in result.output and "1..100" in result.output


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
    # One run each: a ratio without an interval is not shown, and no verdict is given.
    assert f"{folder} / synthetic: images/s no interval: cannot say" in result.output
    (path,) = (data_dir / "training").glob("*.json")
    report = json.loads(path.read_text())
    assert [r["settings"]["data"] for r in report["runs"]] == ["synthetic", str(folder)]
    (ratio,) = report["comparisons"]
    assert ratio["low"] is None and "--repeats 5" in ratio["why"]


def test_missing_data_folder_names_the_option(data_dir: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["train", "digits", "--data", str(tmp_path / "absent")])
    assert result.exit_code == 1
    assert "--data" in result.output


def test_time_to_quality_reports_each_run_and_the_olympic_score(data_dir: Path) -> None:
    result = CliRunner().invoke(app, ["train", "digits", "--target-top1", "0.5", "--runs", "5"])
    assert result.exit_code == 0, result.output
    assert result.output.count("reached in") == 5
    (path,) = (data_dir / "training").glob("digits-ttq-*.json")
    record = json.loads(path.read_text())
    walls = sorted(r["wall_s"] for r in record["runs"])
    assert record["olympic_score_s"] == pytest.approx(sum(walls[1:-1]) / 3)
    assert f"olympic score {record['olympic_score_s']:.2f} s" in result.output
    assert record["hyperparameters"]["opt_name"] == "adam" and record["target_top1"] == 0.5
    for run in record["runs"]:
        keys = [e["key"] for e in run["mllog"]]
        assert keys.count("eval_accuracy") == run["epochs"] and keys[-1] == "run_stop"
        assert run["mllog"][-1]["metadata"] == {"status": "success"}
    lines = path.with_suffix(".mllog").read_text().splitlines()
    assert len(lines) == sum(len(r["mllog"]) for r in record["runs"])
    assert all(line.startswith(":::MLLOG {") for line in lines)


def test_fewer_than_five_runs_get_a_record_but_no_olympic_score(data_dir: Path) -> None:
    result = CliRunner().invoke(app, ["train", "digits", "--target-top1", "0.5", "--runs", "2"])
    assert result.exit_code == 0, result.output
    assert "no olympic score: 2 runs: the olympic score needs 5 or more" in result.output
    (path,) = (data_dir / "training").glob("digits-ttq-*.json")
    assert json.loads(path.read_text())["olympic_score_s"] is None


def test_too_few_runs_names_the_option(data_dir: Path) -> None:
    result = CliRunner().invoke(app, ["train", "digits", "--target-top1", "0.5", "--runs", "0"])
    assert result.exit_code == 1 and "--runs" in result.output


def test_workers_give_speedup_and_efficiency_only_with_intervals(data_dir: Path) -> None:
    common = ["train", "digits", "--steps", "2", "--warmup", "1", "--batch-size", "8"]
    result = CliRunner().invoke(app, [*common, "--workers", "1,2"])
    assert result.exit_code == 0, result.output
    assert "2 workers / 1 workers: speedup no interval: cannot say" in result.output
    assert "2 workers / 1 workers: E(N) no interval: cannot say" in result.output
    (path,) = (data_dir / "training").glob("digits-scaling-*.json")
    report = json.loads(path.read_text())
    assert [(r["workers"], r["backend"]) for r in report["runs"]] == [(1, "gloo"), (2, "gloo")]
    assert [c["figure"] for c in report["comparisons"]] == ["speedup", "efficiency"]
    assert len(set(report["runs"][1]["weight_digests"])) == 1


def _train_rank(rank: int, rendezvous: str, data_dir: Path) -> subprocess.Popen[str]:
    command = ["train", "digits", "--steps", "2", "--warmup", "1", "--batch-size", "8"]
    command += ["--rank", str(rank), "--world-size", "2", "--rendezvous", rendezvous]
    return subprocess.Popen(
        [sys.executable, "-m", "services.cli.main", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "BENCHSTACK_DATA_DIR": str(data_dir)},
        cwd=Path(__file__).resolve().parents[4],
    )


def test_ranks_started_as_separate_commands_meet_at_the_rendezvous(data_dir: Path) -> None:
    """What each pod of k8s/training's Indexed Job runs, here as two local processes."""
    rendezvous = f"tcp://127.0.0.1:{free_port()}"
    processes = [_train_rank(rank, rendezvous, data_dir) for rank in (0, 1)]
    outputs = [process.communicate(timeout=300) for process in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    assert "rank 0 of 2" in outputs[0][0] and "images/s over all workers" in outputs[0][0]
    assert "host: " in outputs[0][0]
    assert outputs[1][0] == ""  # only rank 0 reports
    (path,) = (data_dir / "training").glob("*.json")
    (run,) = json.loads(path.read_text())["runs"]
    assert run["data_parallel"]["world_size"] == 2 and len(run["step_seconds"]) == 2


def test_a_local_rank_that_is_not_a_number_names_the_variable(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCAL_RANK", "first")
    command = ["train", "digits", "--rank", "0", "--world-size", "1"]
    result = CliRunner().invoke(app, [*command, "--rendezvous", "tcp://127.0.0.1:1"])
    assert result.exit_code == 1 and "LOCAL_RANK" in result.output


def test_a_rank_outside_the_world_is_refused_naming_the_option(data_dir: Path) -> None:
    command = ["train", "digits", "--rank", "2", "--world-size", "2"]
    result = CliRunner().invoke(app, [*command, "--rendezvous", "tcp://127.0.0.1:1"])
    assert result.exit_code != 0 and "--rank" in result.output
