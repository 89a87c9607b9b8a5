"""`benchstack train MODEL`, the training workload's command (Workload.cli_command):
training throughput (images/s = batch / mean step time, as tf_cnn_benchmarks gives it) with
warm-up excluded, on the host slot with its load sampled; with --repeats, arms interleaved
and figures with intervals and verdicts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

from services.core.workload import CommandKit
from services.workloads.training.cli_ranks import one_rank
from services.workloads.training.cli_render import print_run, print_summary, show_step
from services.workloads.training.throughput import TrainingSettings

if TYPE_CHECKING:
    from services.workloads.training.session import Arm
    from services.workloads.training.step_timing import StepLog

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
    help="synthetic, an image folder, or two of them, e.g. synthetic,DIR (side by side, "
    "with the ratio of their images/s).",
)
REPEATS = typer.Option(
    1,
    "--repeats",
    help="Runs of every data source (or worker count), interleaved A,B,A,B,... (1..100); "
    "from 5, medians, ratios, speedup and E(N) come with 95 % intervals and a verdict.",
)
DISPLAY_EVERY = typer.Option(
    10,
    "--display-every",
    help="A progress line (step, images/s so far ± s.e., jitter, loss) every N measured "
    "steps, as tf_cnn_benchmarks prints (0: none; 0..100000).",
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
RUNS = typer.Option(
    5,
    "--runs",
    help="Seeded time-to-quality runs (1..20); the olympic score needs 5 or more.",
)
MAX_EPOCHS = typer.Option(30, "--max-epochs", help="Epoch bound per run (1..200).")
WORKERS = typer.Option(
    None,
    "--workers",
    help="Data-parallel scaling: worker counts, e.g. 1,2,4 (torch DistributedDataParallel; "
    "gloo on CPU, NCCL on GPUs; not with --framework tensorflow); with --repeats 5 or more, "
    "speedup and efficiency E(N) per count with intervals.",
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
    ctx: typer.Context,
    model: str = MODEL,
    steps: int = STEPS,
    batch_size: int = BATCH_SIZE,
    warmup: int = WARMUP,
    image_size: int = IMAGE_SIZE,
    data: str = DATA,
    precision: str = PRECISION,
    optimizer: str = OPTIMIZER,
    framework: str = FRAMEWORK,
    repeats: int = REPEATS,
    display_every: int = DISPLAY_EVERY,
    target_top1: float | None = TARGET_TOP1,
    runs: int = RUNS,
    max_epochs: int = MAX_EPOCHS,
    workers: str | None = WORKERS,
    rank: int | None = RANK,
    world_size: int | None = WORLD_SIZE,
    rendezvous: str | None = RENDEZVOUS,
) -> None:
    """Train MODEL for --steps steps and report images/s (batch / mean step time), jitter,
    data share, peak memory and how busy the host was; with --repeats, intervals."""
    kit = CommandKit.of(ctx)
    with kit.user_errors():
        from services.workloads.training import options

        options.check_choice("--framework", framework, options.FRAMEWORKS)
        if framework == "tensorflow":
            _refuse_torch_only_options(target_top1, workers, rank, world_size, rendezvous)
    if target_top1 is not None:
        _time_to_quality(kit, model, target_top1, runs, max_epochs)
        return
    with kit.user_errors():
        from services.workloads.training.session import Arm, check_repeats

        _check_step_options(steps, batch_size, warmup, image_size, precision, optimizer)
        options.check_bounded("--display-every", display_every)
        check_repeats(repeats)
        sources = [part.strip() for part in data.split(",") if part.strip()]
        if not 1 <= len(sources) <= 2:
            raise ValueError(
                "--data: give 'synthetic', an image folder, or two of them (e.g. synthetic,DIR)"
            )
        for source in sources:  # refused before any run, not after the first arm's
            if source != "synthetic" and not Path(source).is_dir():
                raise ValueError(
                    f"--data: {source} is not a folder; pass 'synthetic' or an image folder"
                )
        arms = [Arm(source) for source in sources]
        if workers is not None:
            from services.workloads.training.scaling import parse_workers

            if len(sources) != 1:
                raise ValueError("--workers: give one --data source with it")
            arms = [Arm(sources[0], count) for count in parse_workers(workers)]
        if framework == "tensorflow":
            from services.workloads.training.keras_models import check_keras_model

            check_keras_model(model)
        threads, device = _threads_and_device(framework)
        settings = TrainingSettings(
            data=sources[0],
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
            display_every=display_every,
        )
        if rank is not None or world_size is not None or rendezvous is not None:
            one_rank(kit, settings, rank, world_size, rendezvous)
            return
        _session(kit, settings, arms, repeats)


def _measure(
    settings: TrainingSettings, arm: Arm, show: Callable[[StepLog], None] | None
) -> dict[str, Any]:
    """One run of one arm: a process of its own (Keras), DDP workers, or here (torch)."""
    if arm.workers is not None:
        from services.workloads.training.scaling import measure_point

        return measure_point(settings, arm.workers)
    if settings.framework == "tensorflow":
        from services.workloads.training.keras_throughput import run_keras

        return run_keras(settings, show).as_dict()
    from services.workloads.training.throughput import run

    return run(settings, show).as_dict()


def _session(kit: CommandKit, settings: TrainingSettings, arms: list[Arm], repeats: int) -> None:
    from services.inference.host_slot import HostSlot
    from services.workloads.training.report import write_session_report
    from services.workloads.training.session import run_session
    from shared.settings import get_settings

    out = Console(highlight=False, soft_wrap=True)
    config = get_settings()
    slot = HostSlot.of(config)
    out.print(
        f"{settings.framework} {settings.model} {settings.device} {settings.precision} "
        f"{settings.optimizer} batch {settings.batch_size} threads {settings.threads}, "
        f"{settings.classes} classes, {settings.steps} steps after {settings.warmup} warm-up; "
        f"{len(arms)} arm{'s' if len(arms) != 1 else ''} x {repeats} repeat"
        f"{'s' if repeats != 1 else ''}, interleaved"
    )

    report = run_session(
        settings,
        arms,
        repeats,
        _measure,
        slot,
        on_run=lambda r: print_run(out, r, kit.host_text),
        show=show_step,
    )
    print_summary(out, report)
    out.print(f"report    {write_session_report(report, config.data_dir)}")


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
    """Intra-op threads and device of a run: a thread per CPU this process may keep busy
    (its affinity set, bounded by a container's CPU quota: shared/cpu_quota.py);
    TensorFlow (tensorflow-cpu) runs on the CPU."""
    from shared.cpu_quota import cpu_limit

    if framework == "tensorflow":
        return cpu_limit(), "cpu"
    import torch

    threads = min(torch.get_num_threads(), cpu_limit())
    return threads, "cuda" if torch.cuda.is_available() else "cpu"


def _time_to_quality(
    kit: CommandKit, model: str, target_top1: float, runs: int, max_epochs: int
) -> None:
    out = Console(highlight=False, soft_wrap=True)
    with kit.user_errors():
        from services.workloads.training.time_to_quality import (
            OLYMPIC_RUNS,
            quality_record,
            train_to_target,
            write_quality_record,
        )
        from shared.settings import get_settings

        if model != "digits":
            raise ValueError("--target-top1: time to quality is available for 'digits' only")
        if not 0.0 < target_top1 <= 1.0:
            raise ValueError(f"--target-top1: {target_top1} is outside the accepted range 0..1")
        if not 1 <= runs <= 20:
            raise ValueError(f"--runs: {runs} is outside the accepted range 1..20")
        if not 1 <= max_epochs <= 200:
            raise ValueError(f"--max-epochs: {max_epochs} is outside the accepted range 1..200")
        results = []
        for seed in range(runs):
            run = train_to_target(target_top1, seed=seed, max_epochs=max_epochs)
            results.append(run)
            status = f"reached in {run.epochs} epochs" if run.reached else "did NOT reach"
            out.print(f"seed {seed}: {status}, top-1 {run.top1:.4f}, wall {run.wall_s:.2f} s")
    record = quality_record(results, target_top1, max_epochs)
    path = write_quality_record(record, get_settings().data_dir)
    score = record["olympic_score_s"]
    if score is None:
        out.print(f"no olympic score: {record['olympic_reason']}")
    else:
        out.print(
            f"olympic score {score:.2f} s (fastest and slowest of {runs} runs dropped; "
            f"MLPerf's needs {OLYMPIC_RUNS} or more)"
        )
    out.print(f"report    {path} (mllog lines: {path.with_suffix('.mllog')})")
    if any(not r.reached for r in results):
        raise typer.Exit(code=1)


def register(root: typer.Typer) -> None:
    root.command("train")(train)
