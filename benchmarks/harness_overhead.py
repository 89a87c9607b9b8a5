"""How much throughput does benchstack's harness cost? Offline, resnet18, batch 8.

Measures, in one process and one run, interleaved to cancel drift on a shared machine:
  bare   - a plain ``torch`` loop over the same prepared tensors, batches of 8, on the
           main thread and on a fresh thread (the SUT predicts on a worker thread);
  bench  - benchstack's Offline scenario through LoadGen (QSL, SUT, worker thread).
Prints samples/s of each round and the ratios bench/bare (target >= 0.99).

Two figures, because this machine's neighbours move throughput by +-10 % from one
10-second window to the next (measured: 33.6 to 42.0 samples/s over three rounds), far more
than the harness costs:
  in-run share - inside each benchstack run, the time the model spent in predict() over
                 LoadGen's test duration (samples / LoadGen's samples/s). Both sides of
                 this ratio come from the same seconds, so the host's drift cancels: it is
                 the harness's own cost, read directly.
  side by side - benchstack's samples/s over the bare loop's, each round paired with the
                 bare runs just before it; the median over rounds.

    python benchmarks/harness_overhead.py [--rounds 5] [--duration 10] [--samples 64]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from services.core.catalogue import resolve_model
from services.core.scenario import ScenarioConfig
from services.inference.backends.registry import create_backend
from services.inference.run import execute_run
from services.preprocess.datasets import resolve_dataset
from services.preprocess.pipeline import preprocess

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


class PredictTimer:
    """Wraps a backend's predict() and notes when each call ran (perf_counter seconds)."""

    def __init__(self, predict: Callable[[np.ndarray], np.ndarray]) -> None:
        self._predict = predict
        self.calls: list[tuple[float, float]] = []

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        start = time.perf_counter()
        try:
            return self._predict(batch)
        finally:
            self.calls.append((start, time.perf_counter()))

    def busy_share(self, test_seconds: float) -> float:
        """Share of the last ``test_seconds`` before the last call ended spent in predict():
        the run's warm-up and LoadGen's calibration probe come before that window."""
        end = self.calls[-1][1]
        window_start = end - test_seconds
        busy = sum(max(0.0, stop - max(start, window_start)) for start, stop in self.calls)
        return busy / test_seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measurement")
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
        busy_shares: list[float] = []
        print(
            f"{args.model}, Offline, batch {BATCH}, {torch.get_num_threads()} torch threads, "
            f"{args.duration:g} s per measurement, {args.rounds} rounds"
        )
        timer = PredictTimer(backend.predict)
        backend.predict = timer  # type: ignore[method-assign]  # the benchmark's probe only
        for round_index in range(args.rounds):
            main_rates.append(bare_loop(model, tensors, args.duration))
            thread_rates.append(bare_loop_in_thread(model, tensors, args.duration))
            timer.calls.clear()
            outcome = execute_run(
                manifest=manifest,
                backend=backend,
                scenario=ScenarioConfig(scenario="offline", min_duration_s=args.duration),
                batch_size=BATCH,
                log_dir=Path(tmp) / f"round{round_index}",
                tensors=tensors,
            )
            report = outcome.report
            bench_rates.append(report.samples_per_second)
            # LoadGen's test duration, from its own figures; predict() time inside it.
            test_seconds = report.sample_count / report.samples_per_second
            busy_shares.append(timer.busy_share(test_seconds))
            print(
                f"round {round_index + 1}: bare main thread {main_rates[-1]:7.2f}  "
                f"bare worker thread {thread_rates[-1]:7.2f}  "
                f"benchstack {bench_rates[-1]:7.2f} samples/s  ({report.validity.result}); "
                f"in predict {busy_shares[-1]:.2%} of the test"
            )
    paired = [b / t for b, t in zip(bench_rates, thread_rates, strict=True)]
    print(
        f"median samples/s: bare main thread {statistics.median(main_rates):.2f}, bare worker "
        f"thread {statistics.median(thread_rates):.2f}, benchstack "
        f"{statistics.median(bench_rates):.2f}\n"
        f"in-run share (time in predict / LoadGen test duration): median "
        f"{statistics.median(busy_shares):.4f}, lowest {min(busy_shares):.4f} "
        "(the harness's own cost; target >= 0.99)\n"
        f"side by side, benchstack / bare worker thread: ratio of the medians "
        f"{statistics.median(bench_rates) / statistics.median(thread_rates):.3f}; per round "
        f"median {statistics.median(paired):.3f}, range {min(paired):.3f}..{max(paired):.3f} "
        "(host drift included)"
    )


if __name__ == "__main__":
    main()
