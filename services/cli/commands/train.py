"""`benchstack train MODEL`: training throughput (images/s) with warm-up excluded."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console

from services.cli.errors import user_errors
from services.workloads.training.throughput import TrainingResult, TrainingSettings

MODEL = typer.Argument(
    ...,
    help="torchvision name (e.g. resnet18) or 'digits'. With --framework tensorflow: "
    "digits, resnet18 (a ResNet-18 built in Keras: keras.applications has none), or "
    "resnet50, mobilenet_v2, mobilenet_v3_small, densenet121, efficientnet_b0, "
    "convnext_tiny (keras.applications, weights=None; --image-size 32 or more).",
)
STEPS = typer.Option(20, "--steps", help="Measured steps (1..100000).")
BATCH_SIZE = typer.Option(32, "--batch-size", help="Images per step (1..4096).")
WARMUP = typer.Option(3, "--warmup", help="Steps run first and not measured (0..10000).")
IMAGE_SIZE = typer.Option(32, "--image-size", help="Square image side (8..1024).")
DATA = typer.Option(
    "synthetic",
    "--data",
    help="synthetic, an image folder, or synthetic,DIR (side by side with the ratio).",
)
PRECISION = typer.Option(
    "fp32",
    "--precision",
    help="fp32 or bf16 (torch autocast; Keras mixed precision 'mixed_bfloat16').",
)
OPTIMIZER = typer.Option("sgd", "--optimizer", help="sgd or adam.")
FRAMEWORK = typer.Option(
    "torch",
    "--framework",
    help="torch or tensorflow (Keras, CPU, in a fresh process per run; no --workers, "
    "--rank or --target-top1: those are torch only).",
)
TARGET_TOP1 = typer.Option(
    None, "--target-top1", help="Time to quality (digits only): held-out top-1 in 0..1."
)
RUNS = typer.Option(5, "--runs", help="Seeded time-to-quality runs (3..20).")
MAX_EPOCHS = typer.Option(30, "--max-epochs", help="Epoch bound per run (1..200).")
WORKERS = typer.Option(
    None,
    "--workers",
    help="Data-parallel scaling: worker counts, e.g. 1,2,4 (torch DistributedDataParallel; "
    "gloo on CPU, NCCL on GPUs; not with --framework tensorflow); prints speedup and "
    "efficiency per count.",
)
RANK = typer.Option(
    None, "--rank", help="One worker of a multi-node run: this process's rank (0..N-1)."
)
WORLD_SIZE = typer.Option(
    None, "--world-size", help="With --rank: the number of workers N (1..64)."
)
RENDEZVOUS = typer.Option(
    None, "--rendezvous", help="With --rank: tcp://HOST:PORT where rank 0 listens."
)


def train(
    model: str = MODEL,
    steps: int = STEPS,
    batch_size: int = BATCH_SIZE,
    warmup: int = WARMUP,
    image_size: int = IMAGE_SIZE,
    data: str = DATA,
    precision: str = PRECISION,
    optimizer: str = OPTIMIZER,
    framework: str = FRAMEWORK,
    target_top1: float | None = TARGET_TOP1,
    runs: int = RUNS,
    max_epochs: int = MAX_EPOCHS,
    workers: str | None = WORKERS,
    rank: int | None = RANK,
    world_size: int | None = WORLD_SIZE,
    rendezvous: str | None = RENDEZVOUS,
) -> None:
    """Train MODEL for --steps steps and report images/s, data share and peak memory."""
    with user_errors():
        from services.workloads.training import options

        options.check_choice("--framework", framework, options.FRAMEWORKS)
        if framework == "tensorflow":
            _refuse_torch_only_options(target_top1, workers, rank, world_size, rendezvous)
    if target_top1 is not None:
        _time_to_quality(model, target_top1, runs, max_epochs)
        return
    with user_errors():
        from services.workloads.training.report import write_report
        from services.workloads.training.throughput import TrainingSettings, run
        from shared.settings import get_settings

        _check_step_options(steps, batch_size, warmup, image_size, precision, optimizer)
        sources = [part.strip() for part in data.split(",") if part.strip()]
        if not 1 <= len(sources) <= 2:
            raise ValueError("--data: give 'synthetic', an image folder, or 'synthetic,DIR'")
        if workers is not None:
            from services.workloads.training.scaling import parse_workers

            counts = parse_workers(workers)
            if len(sources) != 1:
                raise ValueError("--workers: give one --data source with it")
        if framework == "tensorflow":
            from services.workloads.training.keras_models import check_keras_model

            check_keras_model(model)
        threads, device = _threads_and_device(framework)
        results = []
        for source in sources:
            settings = TrainingSettings(
                data=source,
                model=model,
                steps=steps,
                batch_size=batch_size,
                warmup=warmup,
                image_size=image_size,
                precision=precision,
                optimizer=optimizer,
                threads=threads,
                device=device,
                framework=framework,
            )
            if workers is not None:
                _scaling(settings, counts)
                return
            if rank is not None or world_size is not None or rendezvous is not None:
                _one_rank(settings, rank, world_size, rendezvous)
                return
            if framework == "tensorflow":
                from services.workloads.training.keras_throughput import run_keras

                results.append(run_keras(settings))
            else:
                results.append(run(settings))
    out = Console(highlight=False, soft_wrap=True)
    for result in results:
        _print_result(out, result, write_report(result, get_settings().data_dir))
    if len(results) == 2:
        _print_ratio(out, results)


def _print_ratio(out: Console, results: list[TrainingResult]) -> None:
    """Two data sources side by side: the second's images/s as a share of the first's."""
    first, second = (r.statistics.mean_images_per_s for r in results)
    out.print(
        f"{results[1].settings.data} / {results[0].settings.data}: "
        f"{second / first:.3f} of the images/s"
    )


def _check_step_options(
    steps: int, batch_size: int, warmup: int, image_size: int, precision: str, optimizer: str
) -> None:
    """Each option of a training step within its bounds or among its choices."""
    from services.workloads.training import options

    for name, value in (
        ("--steps", steps),
        ("--batch-size", batch_size),
        ("--warmup", warmup),
        ("--image-size", image_size),
    ):
        options.check_bounded(name, value)
    options.check_choice("--precision", precision, options.PRECISIONS)
    options.check_choice("--optimizer", optimizer, options.OPTIMIZERS)


def _refuse_torch_only_options(
    target_top1: float | None,
    workers: str | None,
    rank: int | None,
    world_size: int | None,
    rendezvous: str | None,
) -> None:
    """What --framework tensorflow does not do (yet): each is a torch implementation."""
    if workers is not None:
        raise ValueError(
            "--workers: data-parallel scaling is torch DistributedDataParallel only; "
            "leave --workers out with --framework tensorflow, or use --framework torch"
        )
    if rank is not None or world_size is not None or rendezvous is not None:
        raise ValueError(
            "--rank/--world-size/--rendezvous: multi-node training is torch only; "
            "use --framework torch"
        )
    if target_top1 is not None:
        raise ValueError("--target-top1: time to quality is torch only; use --framework torch")


def _threads_and_device(framework: str) -> tuple[int, str]:
    """Intra-op threads and device of a run; TensorFlow (tensorflow-cpu) runs on the CPU
    with a thread per core this process may use."""
    if framework == "tensorflow":
        return len(os.sched_getaffinity(0)), "cpu"
    import torch

    return torch.get_num_threads(), "cuda" if torch.cuda.is_available() else "cpu"


def _scaling(settings: TrainingSettings, counts: list[int]) -> None:
    from services.workloads.training.report import write_scaling_report
    from services.workloads.training.scaling import scaling
    from shared.settings import get_settings

    out = Console(highlight=False, soft_wrap=True)
    out.print(
        f"{settings.model} {settings.device} {settings.precision} {settings.optimizer} "
        f"batch {settings.batch_size} per worker, data {settings.data}, "
        f"{settings.steps} steps after {settings.warmup} warm-up"
    )
    points = scaling(settings, counts)
    single = points[0]
    out.print(
        f"{'workers':>7} {'threads':>7} {'images/s':>10} {'± s.e.':>8} "
        f"{'speedup':>8} {'E(N)':>6}  backend"
    )
    for point in points:
        s = point.statistics
        out.print(
            f"{point.workers:>7} {point.threads_per_worker:>7} {s.mean_images_per_s:>10.1f} "
            f"{s.standard_error_images_per_s:>8.1f} x{point.speedup(single):>7.2f} "
            f"{point.efficiency(single):>6.2f}  {point.backend}"
        )
        if len(set(point.weight_digests)) != 1:
            out.print(f"  {point.workers} workers ended with different weights: not in step")
    out.print(
        f"speedup = images/s(N) / images/s({single.workers}); "
        f"E(N) = speedup / (N / {single.workers}); every N trained through DDP"
    )
    out.print(f"report    {write_scaling_report(settings, points, get_settings().data_dir)}")


def _one_rank(
    settings: TrainingSettings, rank: int | None, world_size: int | None, rendezvous: str | None
) -> None:
    """One worker of a run across hosts (k8s/training/: an Indexed Job); rank 0 prints."""
    from services.workloads.training.scaling import MAX_WORKERS, train_rank
    from services.workloads.training.step_timing import summarise

    if world_size is None or not 1 <= world_size <= MAX_WORKERS:
        raise ValueError(f"--world-size: give the number of workers, 1..{MAX_WORKERS}")
    if rank is None or not 0 <= rank < world_size:
        raise ValueError(f"--rank: give this worker's rank, 0..{world_size - 1}")
    if rendezvous is None or not rendezvous.startswith("tcp://") or ":" not in rendezvous[6:]:
        raise ValueError("--rendezvous: give tcp://HOST:PORT, where rank 0 listens")
    steps, data, digest = train_rank(rank, world_size, rendezvous, settings)
    if rank != 0:
        return
    s = summarise(steps, data, settings.batch_size * world_size)
    out = Console(highlight=False, soft_wrap=True)
    out.print(
        f"{settings.model} {settings.device} rank 0 of {world_size}: "
        f"{s.mean_images_per_s:.1f} ± {s.standard_error_images_per_s:.1f} images/s over all "
        f"workers ({s.steps} steps after {settings.warmup} warm-up); parameters {digest[:12]}"
    )


def _time_to_quality(model: str, target_top1: float, runs: int, max_epochs: int) -> None:
    out = Console(highlight=False, soft_wrap=True)
    with user_errors():
        from services.workloads.training.time_to_quality import olympic_score, train_to_target

        if model != "digits":
            raise ValueError("--target-top1: time to quality is available for 'digits' only")
        if not 0.0 < target_top1 <= 1.0:
            raise ValueError(f"--target-top1: {target_top1} is outside the accepted range 0..1")
        if not 3 <= runs <= 20:
            raise ValueError(f"--runs: {runs} is outside the accepted range 3..20")
        if not 1 <= max_epochs <= 200:
            raise ValueError(f"--max-epochs: {max_epochs} is outside the accepted range 1..200")
        results = []
        for seed in range(runs):
            run = train_to_target(target_top1, seed=seed, max_epochs=max_epochs)
            results.append(run)
            status = f"reached in {run.epochs} epochs" if run.reached else "did NOT reach"
            out.print(f"seed {seed}: {status}, top-1 {run.top1:.4f}, wall {run.wall_s:.2f} s")
    missed = [r.seed for r in results if not r.reached]
    if missed:
        out.print(
            f"no olympic score: seeds {missed} did not reach {target_top1} in {max_epochs} epochs"
        )
        raise typer.Exit(code=1)
    score = olympic_score([r.wall_s for r in results])
    out.print(f"olympic score {score:.2f} s (fastest and slowest of {runs} runs dropped)")


def _print_result(out: Console, result: TrainingResult, path: Path) -> None:
    settings, s = result.settings, result.statistics
    model, precision, optimizer = settings.model, settings.precision, settings.optimizer
    batch_size, warmup, data = settings.batch_size, settings.warmup, settings.data
    out.print(
        f"{settings.framework} {model} {settings.device} {precision} {optimizer} "
        f"batch {batch_size} threads {settings.threads} data {data}"
    )
    out.print(
        f"images/s  {s.mean_images_per_s:.1f} ± {s.standard_error_images_per_s:.1f} "
        f"(standard error, {s.steps} steps after {warmup} warm-up)"
    )
    out.print(f"jitter    {s.jitter:.3f} (mean |Δ step time| / mean step time)")
    out.print(f"data share {s.data_share:.3f} of step time")
    out.print(
        f"peak RSS  {result.peak_rss_bytes / 2**20:.0f} MiB"
        + (
            f", CUDA max allocated {result.cuda_max_allocated_bytes / 2**20:.0f} MiB"
            if result.cuda_max_allocated_bytes is not None
            else ""
        )
    )
    out.print(f"report    {path}")


def register(root: typer.Typer) -> None:
    root.command("train")(train)
