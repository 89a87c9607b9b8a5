"""Data-parallel scaling: the same training on N worker processes with torch's
DistributedDataParallel (gloo on CPU, NCCL on GPUs), for N = 1, 2, ...

As tf_cnn_benchmarks does, each worker keeps the per-worker batch size (weak scaling), so N
workers train on N batches a step. Every N runs through DDP, N = 1 included, so the
comparison holds the framework's gradient all-reduce path constant. The step time of a
worker includes the all-reduce (backward waits for it), so rank 0's steps pace them all:

- throughput(N) = N x batch size / rank 0's step time, mean over measured steps;
- speedup(N) = throughput(N) / throughput(1); efficiency E(N) = speedup(N) / N.

On CPU the workers share the machine's cores: each gets cores // N intra-op threads (at
least one), which the report states. On CUDA worker r uses GPU r.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import queue
import socket
import time
from dataclasses import asdict, dataclass, replace
from datetime import timedelta
from typing import Any

from services.workloads.training.step_timing import StepStatistics, summarise
from services.workloads.training.throughput import (
    TrainingSettings,
    batch_source,
    build_model,
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

    def speedup(self, single: ScalingPoint) -> float:
        return self.statistics.mean_images_per_s / single.statistics.mean_images_per_s

    def efficiency(self, single: ScalingPoint) -> float:
        return self.speedup(single) / (self.workers / single.workers)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "weight_digests": list(self.weight_digests)}


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
        steps, data, digest = train_rank(rank, world, f"tcp://127.0.0.1:{port}", settings)
    except Exception as exc:  # the parent reports it, rather than a bare exit code
        results.put((rank, None, None, f"{type(exc).__name__}: {exc}"))
        raise
    results.put((rank, steps, data, digest))


def train_rank(
    rank: int, world: int, init_method: str, settings: TrainingSettings
) -> tuple[list[float], list[float], str]:
    """Train as rank ``rank`` of ``world`` (rendezvous at ``init_method``, e.g.
    tcp://host:port where rank 0 listens): (step seconds, data seconds, a digest of the
    trained parameters). On CUDA, rank r uses the GPU of its local index (LOCAL_RANK where
    set, else r)."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    cuda = settings.device == "cuda"
    torch.set_num_threads(settings.threads)
    dist.init_process_group(
        "nccl" if cuda else "gloo",
        init_method=init_method,
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=RENDEZVOUS_TIMEOUT_S),
    )
    try:
        local = int(os.environ.get("LOCAL_RANK", rank))
        device = torch.device(f"cuda:{local}" if cuda else "cpu")
        torch.manual_seed(0)  # the same initial weights on every rank (DDP checks shapes)
        model = build_model(settings.model).to(device).train()
        model = DistributedDataParallel(model, device_ids=[local] if cuda else None)
        # Each rank its own data, as each worker would read its own shard.
        steps, data = timed_steps(
            settings, model, batch_source(settings, seed=rank, device=str(device)), device
        )
        # Parameters only: buffers such as BatchNorm's running statistics are updated by
        # each rank's last forward pass on its own data (DDP broadcasts them at the next).
        digest = hashlib.sha256()
        for tensor in model.module.parameters():
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        return steps, data, digest.hexdigest()
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
    _, steps, data, _ = reports[0]
    statistics = summarise(steps, data, settings.batch_size * workers)
    return ScalingPoint(
        workers=workers,
        threads_per_worker=threads,
        backend="nccl" if cuda else "gloo",
        statistics=statistics,
        weight_digests=tuple(report[3] for report in reports),
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
            raise RuntimeError(f"training worker {report[0]} failed: {report[3]}")
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


def scaling(settings: TrainingSettings, counts: list[int]) -> list[ScalingPoint]:
    """A point per worker count, in increasing order; the first is the baseline (1 is
    recommended: speedup and efficiency are relative to the smallest count)."""
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # loopback: one host
    return [measure(settings, workers) for workers in counts]
