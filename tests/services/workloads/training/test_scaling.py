"""Data-parallel scaling through torch DistributedDataParallel: gloo on CPU here, NCCL
where GPUs are."""

from __future__ import annotations

from dataclasses import replace

import pytest

from services.workloads.training.scaling import cuda_index, parse_workers, scaling
from services.workloads.training.throughput import TrainingSettings

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
    assert double.statistics.images_per_s > 0
    # Rank 0's step times are kept, and the figure is 2 x batch / their mean.
    steps = double.timed.step_seconds
    assert double.statistics.images_per_s == pytest.approx(2 * 8 * len(steps) / sum(steps))
    assert single.speedup(single) == 1.0 and single.efficiency(single) == 1.0
    assert double.efficiency(single) == pytest.approx(double.speedup(single) / 2)


def test_nccl_workers_on_gpus() -> None:
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip(f"NCCL scaling needs 2 GPUs; this machine has {torch.cuda.device_count()}")
    _, double = scaling(replace(SETTINGS, device="cuda"), [1, 2])
    assert double.backend == "nccl" and len(set(double.weight_digests)) == 1


def test_a_worker_that_fails_is_reported_with_its_error() -> None:
    with pytest.raises(RuntimeError, match="training worker 0 failed: RuntimeError: mat1"):
        scaling(replace(SETTINGS, image_size=16), [1])


def test_a_rank_uses_the_gpu_of_its_local_rank_never_its_global_rank() -> None:
    assert cuda_index(0, 1) == 0 and cuda_index(3, 1) == 0  # a pod given one GPU uses it
    assert cuda_index(1, 2) == 1
    with pytest.raises(ValueError, match=r"LOCAL_RANK: 2 .* accepted: 0\.\.1"):
        cuda_index(2, 2)
    with pytest.raises(ValueError, match="sees no GPU"):
        cuda_index(0, 0)
