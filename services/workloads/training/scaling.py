"""Data-parallel scaling: the same training on N worker processes with torch's
DistributedDataParallel (gloo on CPU, NCCL on GPUs), for N = 1, 2, ...

As tf_cnn_benchmarks does, each worker keeps the per-worker batch size (weak scaling), so N
workers train on N batches a step. Every N runs through DDP, N = 1 included, so the
comparison holds the framework's gradient all-reduce path constant. The step time of a
worker includes the all-reduce (backward waits for it), so rank 0's steps pace them all:

- throughput(N) = N x batch size / rank 0's mean step time (step_timing's images/s);
- speedup(N) = throughput(N) / throughput(1); efficiency E(N) = speedup(N) / N.

One point per count is one run; `benchstack train --workers 1,2 --repeats 5` measures the
counts in turn, five times, and gives speedup and E(N) with intervals over the repeats
(training/repeats.py).

On CPU the workers share the machine's cores: each gets cores // N intra-op threads (at
least one), which the report states. On CUDA a worker uses the GPU of its local rank (its
index among the ranks on its host: ``cuda_index``).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import queue
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from services.workloads.training.step_timing import (
    DEFINITIONS,
    StepLog,
    StepStatistics,
    TimedSteps,
    summarise,
)
from services.workloads.training.throughput import (
    TrainingSettings,
    batch_source,
    build_model,
    settings_dict,
    timed_steps,
)

MAX_WORKERS = 64
MAX_POINTS = 8
RENDEZVOUS_TIMEOUT_S = 120


@dataclass(frozen=True)
class ScalingPoint:
    workers: int
    threads_per_worker: int
    backend: str
    statistics: StepStatistics  # images/s over all workers (N x batch / step time)
    # One digest of the trained parameters per rank: equal when the all-reduce kept the
    # replicas in step (the check that the workers really trained one model together).
    weight_digests: tuple[str, ...]
    # Rank 0's measured steps, which pace the gang: the statistics' raw times.
    timed: TimedSteps = field(default_factory=lambda: TimedSteps([], [], []))

    def speedup(self, single: ScalingPoint) -> float:
        return self.statistics.images_per_s / single.statistics.images_per_s

    def efficiency(self, single: ScalingPoint) -> float:
        return self.speedup(single) / (self.workers / single.workers)

    def as_dict(self) -> dict[str, Any]:
        return {
            "workers": self.workers,
            "threads_per_worker": self.threads_per_worker,
            "backend": self.backend,
            "statistics": self.statistics.as_dict(),
            "weight_digests": list(self.weight_digests),
            "step_seconds": self.timed.step_seconds,
            "data_seconds": self.timed.data_seconds,
            "log": [line.as_dict() for line in self.timed.log],
        }


def parse_workers(text: str) -> list[int]:
    """'1,2,4' -> [1, 2, 4]; a clear error naming --workers otherwise."""
    counts = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or not 1 <= int(part) <= MAX_WORKERS:
            raise ValueError(
                f"--workers: {part!r} is not accepted; give worker counts in 1..{MAX_WORKERS} "
                "separated by commas, e.g. 1,2,4"
            )
        counts.append(int(part))
    if not 1 <= len(counts) <= MAX_POINTS or len(set(counts)) != len(counts):
        raise ValueError(f"--workers: give 1..{MAX_POINTS} distinct counts, e.g. 1,2,4")
    return sorted(counts)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _worker(rank: int, world: int, port: int, settings: TrainingSettings, results: Any) -> None:
    try:
        # One host: a worker's local rank is its rank.
        timed, digest = train_rank(rank, world, f"tcp://127.0.0.1:{port}", settings, rank)
    except Exception as exc:  # the parent reports it, rather than a bare exit code
        results.put((rank, None, f"{type(exc).__name__}: {exc}"))
        raise
    results.put((rank, timed, digest))


def cuda_index(local_rank: int, device_count: int) -> int:
    """The GPU a rank trains on: its local rank (its index among the ranks on its host),
    except where the process sees one GPU only (a pod or agent given its own GPU), which it
    uses whatever its local rank. A rank on a host with fewer GPUs than ranks is refused."""
    if device_count < 1:
        raise ValueError("device: cuda was asked for, but this process sees no GPU")
    if device_count == 1:
        return 0
    if not 0 <= local_rank < device_count:
        raise ValueError(
            f"LOCAL_RANK: {local_rank} is not a GPU of this host; accepted: 0..{device_count - 1}"
            " (one rank per GPU)"
        )
    return local_rank


def train_rank(
    rank: int,
    world: int,
    init_method: str,
    settings: TrainingSettings,
    local_rank: int,
    images_per_step: int | None = None,
    show: Callable[[StepLog], None] | None = None,
) -> tuple[TimedSteps, str]:
    """Train as rank ``rank`` of ``world`` (rendezvous at ``init_method``, e.g.
    tcp://host:port where rank 0 listens): (the measured steps, a digest of the trained
    parameters). ``local_rank`` is the rank's index among the ranks on its host (the
    launcher's LOCAL_RANK): on CUDA it picks the GPU (``cuda_index``), never the global
    rank, which names no GPU of a one-GPU pod. Progress lines count ``images_per_step``
    (default: world x batch size)."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    cuda = settings.device == "cuda"
    torch.set_num_threads(settings.threads)
    index = cuda_index(local_rank, torch.cuda.device_count()) if cuda else 0
    dist.init_process_group(
        "nccl" if cuda else "gloo",
        init_method=init_method,
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=RENDEZVOUS_TIMEOUT_S),
    )
    try:
        device = torch.device(f"cuda:{index}" if cuda else "cpu")
        torch.manual_seed(0)  # the same initial weights on every rank (DDP checks shapes)
        model = build_model(settings.model).to(device).train()
        model = DistributedDataParallel(model, device_ids=[index] if cuda else None)
        # Each rank its own data, as each worker would read its own shard.
        timed = timed_steps(
            settings,
            model,
            batch_source(settings, seed=rank, device=str(device)),
            device,
            show,
            images_per_step=images_per_step or world * settings.batch_size,
        )
        # Parameters only: buffers such as BatchNorm's running statistics are updated by
        # each rank's last forward pass on its own data (DDP broadcasts them at the next).
        digest = hashlib.sha256()
        for tensor in model.module.parameters():
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        return timed, digest.hexdigest()
    finally:
        dist.destroy_process_group()


def measure(settings: TrainingSettings, workers: int) -> ScalingPoint:
    """One point: ``workers`` processes training together."""
    cuda = settings.device == "cuda"
    if cuda:
        import torch

        if workers > torch.cuda.device_count():
            raise ValueError(
                f"--workers: {workers} workers need {workers} GPUs; this machine has "
                f"{torch.cuda.device_count()}"
            )
    threads = max(1, settings.threads // workers) if not cuda else settings.threads
    per_worker = replace(settings, threads=threads)
    # Spawned: a forked child would inherit the caller's torch thread pools mid-state.
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    port = free_port()
    processes = [
        context.Process(target=_worker, args=(rank, workers, port, per_worker, results))
        for rank in range(workers)
    ]
    for process in processes:
        process.start()
    try:
        reports = _collect(results, processes, deadline=time.monotonic() + _budget_s(settings))
    finally:
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
    reports.sort(key=lambda report: report[0])
    _, timed, _ = reports[0]
    statistics = summarise(timed.step_seconds, timed.data_seconds, settings.batch_size * workers)
    return ScalingPoint(
        workers=workers,
        threads_per_worker=threads,
        backend="nccl" if cuda else "gloo",
        statistics=statistics,
        weight_digests=tuple(report[2] for report in reports),
        timed=timed,
    )


def _collect(results: Any, processes: list[Any], deadline: float) -> list[Any]:
    """Every worker's report; an error as soon as one worker dies without one (the others
    would wait for it in the all-reduce) or at the deadline."""
    reports: list[Any] = []
    while len(reports) < len(processes):
        try:
            report = results.get(timeout=0.5)
        except queue.Empty:
            report = None
        if report is not None and report[1] is None:
            for process in processes:
                process.kill()
            raise RuntimeError(f"training worker {report[0]} failed: {report[2]}")
        if report is not None:
            reports.append(report)
            continue
        failed = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
        if failed or time.monotonic() > deadline:
            for process in processes:
                process.kill()
            why = f"exit codes {failed}" if failed else "past the deadline"
            raise RuntimeError(
                f"{len(processes)} training workers: {len(reports)} reported ({why})"
            )
    return reports


def _budget_s(settings: TrainingSettings) -> float:
    # A generous bound for the whole run; a hung rendezvous or worker ends in an error.
    return RENDEZVOUS_TIMEOUT_S + 5.0 * (settings.warmup + settings.steps)


def measure_point(settings: TrainingSettings, workers: int) -> dict[str, Any]:
    """One point as a `benchstack train` session stores a run: its settings, rank 0's
    statistics and raw step times, the workers' threads and weight digests."""
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # loopback: one host
    point = measure(settings, workers)
    return {
        "settings": settings_dict(settings),
        **point.as_dict(),
        "definitions": DEFINITIONS
        | {"images_per_s": "workers x batch size / rank 0's mean step seconds"},
    }


def scaling(settings: TrainingSettings, counts: list[int]) -> list[ScalingPoint]:
    """A point per worker count, in increasing order; the first is the baseline (1 is
    recommended: speedup and efficiency are relative to the smallest count)."""
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # loopback: one host
    return [measure(settings, workers) for workers in counts]
