"""How much throughput does benchstack's harness cost? Offline, resnet18, batch 8.

Measures, in one process and one run, interleaved to cancel drift on a shared machine:
  bare   - a plain ``torch`` loop over the same prepared tensors, batches of 8, on the
           main thread and on a fresh thread (the SUT predicts on a worker thread);
  bench  - benchstack's Offline scenario through LoadGen (QSL, SUT, worker thread).
Prints samples/s of each round and the ratios bench/bare (target >= 0.97).

    python benchmarks/harness_overhead.py [--rounds 3] [--duration 20] [--samples 64]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import torch

from services.inference.backends.base import create_backend
from services.inference.loadgen.config import ScenarioConfig
from services.inference.run import execute_run
from services.preprocess.datasets import resolve_dataset
from services.preprocess.pipeline import preprocess
from shared.catalogue import resolve_model

BATCH = 8


def bare_loop(model: torch.nn.Module, tensors: np.ndarray, duration_s: float) -> float:
    """Samples/s of model(batch) over the prepared tensors, cycling, for duration_s."""
    batches = [
        torch.from_numpy(tensors[i : i + BATCH]) for i in range(0, len(tensors) - BATCH + 1, BATCH)
    ]
    done = 0
    start = time.perf_counter()
    with torch.inference_mode():
        while time.perf_counter() - start < duration_s:
            for batch in batches:
                model(batch)
                done += len(batch)
    return done / (time.perf_counter() - start)


def bare_loop_in_thread(model: torch.nn.Module, tensors: np.ndarray, duration_s: float) -> float:
    """The same loop on a fresh thread, as the SUT's worker runs predict().

    On this kind of machine a fresh thread runs torch's CPU kernels a few per cent faster
    than the main thread; measuring both keeps that effect out of the harness's figure.
    """
    result: list[float] = []
    thread = threading.Thread(target=lambda: result.append(bare_loop(model, tensors, duration_s)))
    thread.start()
    thread.join()
    return result[0]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per measurement")
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--model", default="resnet18")
    args = parser.parse_args()

    manifest = resolve_model(args.model)
    with tempfile.TemporaryDirectory() as tmp:
        dataset = resolve_dataset("synthetic", count=args.samples, seed=0, cache_dir=Path(tmp))
        tensors = preprocess(dataset.samples, manifest.inputs[0]).tensors
        backend = create_backend("torch")
        backend.load(manifest)
        model = backend.model  # type: ignore[attr-defined]  # the very same module object
        bare_loop(model, tensors, 3.0)  # warm both paths' caches and allocator

        main_rates: list[float] = []
        thread_rates: list[float] = []
        bench_rates: list[float] = []
        print(
            f"{args.model}, Offline, batch {BATCH}, {torch.get_num_threads()} torch threads, "
            f"{args.duration:g} s per measurement, {args.rounds} rounds"
        )
        for round_index in range(args.rounds):
            main_rates.append(bare_loop(model, tensors, args.duration))
            thread_rates.append(bare_loop_in_thread(model, tensors, args.duration))
            outcome = execute_run(
                manifest=manifest,
                backend=backend,
                scenario=ScenarioConfig(scenario="offline", min_duration_s=args.duration),
                batch_size=BATCH,
                log_dir=Path(tmp) / f"round{round_index}",
                tensors=tensors,
            )
            bench_rates.append(outcome.report.samples_per_second)
            print(
                f"round {round_index + 1}: bare main thread {main_rates[-1]:7.2f}  "
                f"bare worker thread {thread_rates[-1]:7.2f}  "
                f"benchstack {bench_rates[-1]:7.2f} samples/s  ({outcome.report.validity.result})"
            )
    main_median = statistics.median(main_rates)
    thread_median = statistics.median(thread_rates)
    bench_median = statistics.median(bench_rates)
    print(
        f"median samples/s: bare main thread {main_median:.2f}, bare worker thread "
        f"{thread_median:.2f}, benchstack {bench_median:.2f}\n"
        f"ratio benchstack / bare worker thread = {bench_median / thread_median:.3f} "
        "(the harness's cost; target >= 0.97)\n"
        f"ratio benchstack / bare main thread   = {bench_median / main_median:.3f}"
    )


if __name__ == "__main__":
    main()
