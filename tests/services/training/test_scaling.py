"""Data-parallel scaling through torch DistributedDataParallel: gloo on CPU here, NCCL
where GPUs are."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from services.training.scaling import free_port, parse_workers, scaling
from services.training.throughput import TrainingSettings

pytest.importorskip("torch", reason="training needs torch")

SETTINGS = TrainingSettings(
    model="digits",
    steps=3,
    batch_size=8,
    warmup=1,
    image_size=32,  # the digits CNN takes 32x32
    precision="fp32",
    optimizer="sgd",
    data="synthetic",
    threads=2,
    device="cpu",
)


@pytest.mark.parametrize("text", ["0", "1,x", "65", "1,1", "", "1,2,3,4,5,6,7,8,9"])
def test_worker_counts_outside_the_bounds_are_refused_naming_the_option(text: str) -> None:
    with pytest.raises(ValueError, match="--workers"):
        parse_workers(text)


def test_worker_counts_are_read_in_increasing_order() -> None:
    assert parse_workers("4, 1,2") == [1, 2, 4]


def test_two_cpu_workers_train_one_model_together_and_report_against_one() -> None:
    single, double = scaling(SETTINGS, [1, 2])
    assert (single.workers, double.workers) == (1, 2)
    assert single.backend == double.backend == "gloo"
    # The cores are shared: two workers get half the threads each.
    assert (single.threads_per_worker, double.threads_per_worker) == (2, 1)
    # The all-reduce kept both replicas' parameters identical after training.
    assert len(double.weight_digests) == 2 and len(set(double.weight_digests)) == 1
    assert single.statistics.steps == double.statistics.steps == SETTINGS.steps
    assert double.statistics.mean_images_per_s > 0
    assert single.speedup(single) == 1.0 and single.efficiency(single) == 1.0
    assert double.efficiency(single) == pytest.approx(double.speedup(single) / 2)


def test_the_cli_prints_speedup_and_efficiency_per_count(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "services.cli.main",
            "train",
            "digits",
            "--steps",
            "2",
            "--warmup",
            "1",
            "--batch-size",
            "8",
            "--image-size",
            "32",
            "--workers",
            "1,2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "BENCHSTACK_DATA_DIR": str(tmp_path)},
        cwd=Path(__file__).resolve().parents[3],
    )
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [row[0] for row in rows] == ["1", "2"]
    assert rows[0][4:6] == ["x", "1.00"] and "gloo" in rows[1]
    assert list((tmp_path / "training").glob("digits-scaling-*.json"))


def test_nccl_workers_on_gpus() -> None:
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip(f"NCCL scaling needs 2 GPUs; this machine has {torch.cuda.device_count()}")
    _, double = scaling(replace(SETTINGS, device="cuda"), [1, 2])
    assert double.backend == "nccl" and len(set(double.weight_digests)) == 1


def test_a_worker_that_fails_is_reported_with_its_error() -> None:
    with pytest.raises(RuntimeError, match="training worker 0 failed: RuntimeError: mat1"):
        scaling(replace(SETTINGS, image_size=16), [1])


def test_ranks_started_as_separate_commands_meet_at_the_rendezvous(tmp_path: Path) -> None:
    """What each pod of k8s/training's Indexed Job runs, here as two local processes."""

    rendezvous = f"tcp://127.0.0.1:{free_port()}"
    common = ["train", "digits", "--steps", "2", "--warmup", "1", "--batch-size", "8"]
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "services.cli.main",
                *common,
                "--rank",
                str(rank),
                "--world-size",
                "2",
                "--rendezvous",
                rendezvous,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "BENCHSTACK_DATA_DIR": str(tmp_path)},
            cwd=Path(__file__).resolve().parents[3],
        )
        for rank in (0, 1)
    ]
    outputs = [process.communicate(timeout=300) for process in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    assert "rank 0 of 2" in outputs[0][0] and "images/s over all workers" in outputs[0][0]
    assert outputs[1][0] == ""  # only rank 0 reports


def test_a_rank_outside_the_world_is_refused_naming_the_option(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "services.cli.main",
            "train",
            "digits",
            "--rank",
            "2",
            "--world-size",
            "2",
            "--rendezvous",
            "tcp://127.0.0.1:1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "BENCHSTACK_DATA_DIR": str(tmp_path)},
        cwd=Path(__file__).resolve().parents[3],
    )
    assert result.returncode != 0 and "--rank" in result.stdout + result.stderr
