"""`benchstack train MODEL`: training throughput (images/s = batch / mean step time, as
tf_cnn_benchmarks gives it) with warm-up excluded, on the host slot with its load sampled;
with --repeats, arms interleaved and figures with intervals and verdicts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape

from services.cli.errors import user_errors
from services.workloads.training.throughput import TrainingSettings

if TYPE_CHECKING:
    from services.workloads.training.session import Arm, ArmRun, SessionReport
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
    with user_errors():
        from services.workloads.training import options

        options.check_choice("--framework", framework, options.FRAMEWORKS)
        if framework == "tensorflow":
            _refuse_torch_only_options(target_top1, workers, rank, world_size, rendezvous)
    if target_top1 is not None:
        _time_to_quality(model, target_top1, runs, max_epochs)
        return
    with user_errors():
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
            _one_rank(settings, rank, world_size, rendezvous)
            return
        _session(settings, arms, repeats)


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


def _session(settings: TrainingSettings, arms: list[Arm], repeats: int) -> None:
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
        settings, arms, repeats, _measure, slot, on_run=lambda r: _print_run(out, r), show=_show
    )
    _print_summary(out, report)
    out.print(f"report    {write_session_report(report, config.data_dir)}")


def _show(line: StepLog) -> None:
    """A progress line as tf_cnn_benchmarks prints it, tab-separated (plain text: a rich
    console would expand the tabs)."""
    typer.echo(line.line())


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


def local_rank_of(environ: dict[str, str]) -> int:
    """This process's index among the ranks on its host: LOCAL_RANK as a launcher (torchrun,
    k8s/training's Job) sets it; 0 where unset (one rank per host or pod)."""
    text = environ.get("LOCAL_RANK", "0").strip()
    if not text.isdigit():
        raise ValueError(
            f"LOCAL_RANK: {text!r} is not accepted; give this rank's index on its host, 0 or more"
        )
    return int(text)


def _one_rank(
    settings: TrainingSettings, rank: int | None, world_size: int | None, rendezvous: str | None
) -> None:
    """One worker of a run across hosts (k8s/training/: an Indexed Job); rank 0 prints and
    writes the report. Ranks on one host hold its slot together (shared), as a gang's do."""
    import os

    from services.inference.host_slot import HostSlot
    from services.workloads.training.report import write_session_report
    from services.workloads.training.scaling import MAX_WORKERS
    from services.workloads.training.session import Arm, run_session
    from shared.settings import get_settings

    if world_size is None or not 1 <= world_size <= MAX_WORKERS:
        raise ValueError(f"--world-size: give the number of workers, 1..{MAX_WORKERS}")
    if rank is None or not 0 <= rank < world_size:
        raise ValueError(f"--rank: give this worker's rank, 0..{world_size - 1}")
    if rendezvous is None or not rendezvous.startswith("tcp://") or ":" not in rendezvous[6:]:
        raise ValueError("--rendezvous: give tcp://HOST:PORT, where rank 0 listens")
    local_rank = local_rank_of(dict(os.environ))
    me, world, address = rank, world_size, rendezvous  # checked: no longer optional
    out = Console(highlight=False, soft_wrap=True)

    def measure(
        settings: TrainingSettings, arm: Arm, show: Callable[[StepLog], None] | None
    ) -> dict[str, Any]:
        import resource

        from services.workloads.training.scaling import train_rank
        from services.workloads.training.throughput import result_of

        timed, digest = train_rank(me, world, address, settings, local_rank, show=show)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        images = settings.batch_size * world
        document = result_of(settings, timed, peak, images_per_step=images).as_dict()
        section = {"rank": me, "local_rank": local_rank, "world_size": world}
        return document | {"data_parallel": section | {"weight_digest": digest}}

    config = get_settings()
    slot = HostSlot.of(config)
    report = run_session(
        settings,
        [Arm(settings.data)],
        1,
        measure,
        slot,
        show=_show if rank == 0 else None,
        shared=True,  # ranks on one host must run together: they hold its slot together
    )
    if rank != 0:
        return
    (run,) = report.runs
    s, digest = run.document["statistics"], run.document["data_parallel"]["weight_digest"]
    out.print(
        f"{settings.model} {settings.device} rank 0 of {world_size}: "
        f"{s['images_per_s']:.1f} ± {s['standard_error_images_per_s']:.1f} images/s over all "
        f"workers ({s['steps']} steps after {settings.warmup} warm-up); parameters {digest[:12]}"
    )
    _print_run(out, run)
    out.print(f"report    {write_session_report(report, config.data_dir)}")


def _time_to_quality(model: str, target_top1: float, runs: int, max_epochs: int) -> None:
    out = Console(highlight=False, soft_wrap=True)
    with user_errors():
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


def _print_run(out: Console, run: ArmRun) -> None:
    """One run as it ends: its images/s with standard error and jitter, and its host."""
    from services.cli.render import host_text

    s, document = run.document["statistics"], run.document
    workers = "" if run.arm.workers is None else f", {document['threads_per_worker']} threads each"
    out.print(
        f"[bold]{escape(run.arm.label)}[/] repeat {run.repeat + 1}{workers}: "
        f"images/s {s['images_per_s']:.1f} ± {s['standard_error_images_per_s']:.1f} "
        f"(jitter {s['jitter_images_per_s']:.1f}; batch / mean step "
        f"{s['mean_step_s'] * 1e3:.1f} ms over {s['steps']} steps), "
        f"data share {s['data_share']:.3f}" + _memory(document)
    )
    if run.arm.workers is not None and len(set(document["weight_digests"])) != 1:
        out.print(f"  {run.arm.workers} workers ended with different weights: not in step")
    out.print(f"  host: {host_text(document['host'])}")


def _memory(document: dict[str, Any]) -> str:
    rss, cuda = document.get("peak_rss_bytes"), document.get("cuda_max_allocated_bytes")
    text = f", peak RSS {rss / 2**20:.0f} MiB" if rss else ""
    return text + (f", CUDA max allocated {cuda / 2**20:.0f} MiB" if cuda else "")


def _print_summary(out: Console, report: SessionReport) -> None:
    """Each arm's median with its interval, then each comparison with its verdict."""
    from services.workloads.training.repeats import DIFFER

    if report.repeats > 1:
        for figure in report.figures:
            interval = (
                f"[{figure.low:.1f}, {figure.high:.1f}]"
                if figure.low is not None and figure.high is not None
                else f"(no interval: {figure.reason})"
            )
            out.print(
                f"{escape(figure.arm)}: median images/s {figure.images_per_s:.1f} {interval} "
                f"over {figure.runs} runs"
            )
    for c in report.comparisons:
        name = {"ratio": "images/s", "speedup": "speedup", "efficiency": "E(N)"}[c.figure]
        head = f"{escape(c.b)} / {escape(c.a)}: {name}"
        colour = "bold" if c.verdict == DIFFER else "yellow"
        if c.low is not None and c.high is not None:
            value = f"{c.estimate:.3f} [{c.low:.3f}, {c.high:.3f}]"
        else:
            value = "no interval"  # a ratio is shown with its interval or not at all
        out.print(f"{head} {value}: [{colour}]{c.verdict}[/] ({escape(c.why)})")
    if report.busy_runs:
        out.print(
            f"[bold red]BUSY[/]: {report.busy_runs} of {len(report.runs)} runs measured while "
            "other processes took the CPUs; their figures describe the neighbour too"
        )


def register(root: typer.Typer) -> None:
    root.command("train")(train)
