"""What does each trace level cost? Interleaved NONE / MODEL / FRAMEWORK / LIBRARY passes.

One loaded backend, one batch; each round runs one pass per level (``run_pass``, the
pass the profiler itself runs) in a rotated order, so drift on a shared machine reaches
every level alike. Prints each level's median and p99 latency over all rounds and their
ratio to NONE (the acceptance: MODEL's median within 2 % of NONE's). Many short rounds
interleave more finely than a few long ones, which matters on a shared machine.

    python benchmarks/profiling_overhead.py [--model resnet18] [--framework torch]
        [--rounds 16] [--iterations 4] [--batch-size 1] [--threads 1]
"""

from __future__ import annotations

import argparse

import numpy as np

from services.inference.backends.base import BackendOptions, create_backend
from services.inference.profiling.passes import new_profile, run_pass
from shared.catalogue import resolve_model

LEVELS = ("NONE", "MODEL", "FRAMEWORK", "LIBRARY")
MODEL_TOLERANCE = 0.02


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--framework", default=None)
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    manifest = resolve_model(args.model)
    framework = args.framework or manifest.framework.name
    backend = create_backend(framework, BackendOptions(intra_op_threads=args.threads))
    backend.load(manifest)
    shape = (args.batch_size, *manifest.inputs[0].shape)
    batch = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    backend.warm_up(batch)

    latencies: dict[str, list[int]] = {level: [] for level in LEVELS}
    skipped: dict[str, str] = {}
    for round_index in range(args.rounds):
        order = LEVELS[round_index % len(LEVELS) :] + LEVELS[: round_index % len(LEVELS)]
        for level in order:
            # A fresh profile each pass: the spans are not the point here, only the time.
            result = run_pass(backend, batch, level, args.iterations, new_profile(level, 1))
            if result.skipped:
                skipped[level] = result.skipped
            latencies[level].extend(result.latencies_ns)
    backend.close()

    print(
        f"{args.model} on {framework}, batch {args.batch_size}, {args.threads} thread(s): "
        f"{args.rounds} rounds x {args.iterations} iterations per level, interleaved"
    )
    base = np.asarray(latencies["NONE"], dtype=np.float64) / 1e6
    base_median, base_p99 = float(np.median(base)), float(np.percentile(base, 99))
    print(f"{'level':<10} {'median ms':>10} {'p99 ms':>10} {'median/NONE':>12} {'p99/NONE':>10}")
    for level in LEVELS:
        if level in skipped:
            print(f"{level:<10} skipped: {skipped[level]}")
            continue
        values = np.asarray(latencies[level], dtype=np.float64) / 1e6
        median, p99 = float(np.median(values)), float(np.percentile(values, 99))
        print(
            f"{level:<10} {median:>10.3f} {p99:>10.3f} "
            f"{median / base_median:>12.3f} {p99 / base_p99:>10.3f}"
        )
    model_ratio = float(np.median(np.asarray(latencies["MODEL"]) / 1e6)) / base_median
    verdict = "within" if abs(model_ratio - 1) <= MODEL_TOLERANCE else "NOT within"
    print(f"MODEL median is {verdict} {MODEL_TOLERANCE:.0%} of NONE ({model_ratio:.3f})")


if __name__ == "__main__":
    main()
