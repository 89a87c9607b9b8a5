"""`benchstack train --rank R --world-size N --rendezvous tcp://HOST:PORT`: one worker of a
data-parallel run across hosts (k8s/training/ runs one per pod of an Indexed Job)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console

from services.core.workload import CommandKit
from services.workloads.training.cli_render import print_run, show_step
from services.workloads.training.throughput import TrainingSettings

if TYPE_CHECKING:
    from services.workloads.training.session import Arm
    from services.workloads.training.step_timing import StepLog


def local_rank_of(environ: dict[str, str]) -> int:
    """This process's index among the ranks on its host: LOCAL_RANK as a launcher (torchrun,
    k8s/training's Job) sets it; 0 where unset (one rank per host or pod)."""
    text = environ.get("LOCAL_RANK", "0").strip()
    if not text.isdigit():
        raise ValueError(
            f"LOCAL_RANK: {text!r} is not accepted; give this rank's index on its host, 0 or more"
        )
    return int(text)


def one_rank(
    kit: CommandKit,
    settings: TrainingSettings,
    rank: int | None,
    world_size: int | None,
    rendezvous: str | None,
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
        show=show_step if rank == 0 else None,
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
    print_run(out, run, kit.host_text)
    out.print(f"report    {write_session_report(report, config.data_dir)}")
