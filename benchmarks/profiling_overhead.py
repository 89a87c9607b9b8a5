"""What does each trace level cost? Interleaved NONE / NONE / MODEL / FRAMEWORK / LIBRARY
passes, judged against the benchmark's own noise floor.

One loaded backend, one batch; each round runs one pass per level (``run_pass``, the
pass the profiler itself runs) in a rotated order, so drift on a shared machine reaches
every level alike. NONE runs twice a round (NONE and NONE-again): the same code, so their
ratio is what this machine's noise alone makes of "no overhead" — the noise floor.

Each level's figure is the median over rounds of (its median in the round / NONE's median
in the round), with a 90 % interval from resampling the rounds (bootstrap). A level is
called free of measurable overhead when its interval holds 1; the 2 % target for MODEL is
judged only when the interval decides it (inside [0.98, 1.02]: within; wholly outside:
not within); otherwise the run says the noise floor is too high to tell.

    python benchmarks/profiling_overhead.py [--model resnet18] [--framework torch]
        [--rounds 16] [--iterations 4] [--batch-size 1] [--threads 1]
"""

from __future__ import annotations

import argparse

import numpy as np

from services.core.catalogue import resolve_model
from services.inference.backend_interface import BackendOptions
from services.inference.backends.registry import create_backend
from services.inference.profiling.passes import new_profile, run_pass
from shared.host_load import HostLoadSampler

# "NONE-again" runs the NONE pass a second time: the noise floor.
LEVELS = ("NONE", "NONE-again", "MODEL", "FRAMEWORK", "LIBRARY")
MODEL_TOLERANCE = 0.02
BOOTSTRAP_SAMPLES = 2000


def interval(ratios: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    """(median, 5th, 95th percentile of the median over resampled rounds)."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(ratios), size=(BOOTSTRAP_SAMPLES, len(ratios)))
    medians = np.median(ratios[picks], axis=1)
    low, high = np.percentile(medians, [5, 95])
    return float(np.median(ratios)), float(low), float(high)


def model_verdict(low: float, high: float) -> str:
    if low >= 1 - MODEL_TOLERANCE and high <= 1 + MODEL_TOLERANCE:
        return f"MODEL's median is within {MODEL_TOLERANCE:.0%} of NONE's"
    if high < 1 - MODEL_TOLERANCE or low > 1 + MODEL_TOLERANCE:
        return f"MODEL's median is NOT within {MODEL_TOLERANCE:.0%} of NONE's"
    return (
        f"MODEL's {MODEL_TOLERANCE:.0%} target cannot be judged: its interval "
        f"[{low:.3f}, {high:.3f}] straddles it (run more rounds, or on a quieter host)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--framework", default=None)
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if args.rounds < 2 or args.iterations < 1:
        raise SystemExit("--rounds must be at least 2 and --iterations at least 1")

    manifest = resolve_model(args.model)
    framework = args.framework or manifest.framework.name
    backend = create_backend(framework, BackendOptions(intra_op_threads=args.threads))
    backend.load(manifest)
    shape = (args.batch_size, *manifest.inputs[0].shape)
    batch = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    backend.warm_up(batch)

    # Per round, each level's median latency (ms).
    medians: dict[str, list[float]] = {level: [] for level in LEVELS}
    skipped: dict[str, str] = {}
    with HostLoadSampler() as load:
        for round_index in range(args.rounds):
            order = LEVELS[round_index % len(LEVELS) :] + LEVELS[: round_index % len(LEVELS)]
            for level in order:
                instrument = "NONE" if level == "NONE-again" else level
                # A fresh profile each pass: the spans are not the point, only the time.
                result = run_pass(
                    backend, batch, instrument, args.iterations, new_profile(instrument, 1)
                )
                if result.skipped:
                    skipped[level] = result.skipped
                    continue
                medians[level].append(float(np.median(result.latencies_ns)) / 1e6)
    backend.close()

    print(
        f"{args.model} on {framework}, batch {args.batch_size}, {args.threads} thread(s): "
        f"{args.rounds} rounds x {args.iterations} iterations per level, interleaved"
    )
    host = load.result
    print(f"host: {'BUSY' if host.busy else 'quiet'}: {host.reason}")
    base = np.asarray(medians["NONE"])
    print(f"{'level':<11} {'median ms':>10} {'IQR ms':>8} {'x NONE':>8} {'90 % interval':>17}")
    found: dict[str, tuple[float, float, float]] = {}
    for level in LEVELS:
        if level in skipped:
            print(f"{level:<11} skipped: {skipped[level]}")
            continue
        values = np.asarray(medians[level])
        found[level] = interval(values / base, seed=len(found))
        ratio, low, high = found[level]
        q1, q3 = np.percentile(values, [25, 75])
        print(
            f"{level:<11} {np.median(values):>10.3f} {q3 - q1:>8.3f} {ratio:>8.3f} "
            f"   [{low:.3f}, {high:.3f}]"
        )
    _, floor_low, floor_high = found["NONE-again"]
    floor = max(1 - floor_low, floor_high - 1)
    print(
        f"noise floor (NONE against NONE): ±{floor:.1%} "
        f"(90 % interval [{floor_low:.3f}, {floor_high:.3f}])"
    )
    for level in ("MODEL", "FRAMEWORK", "LIBRARY"):
        if level not in found:
            continue
        ratio, low, high = found[level]
        if low <= 1 <= high:
            print(f"{level}: no overhead measurable above the noise floor (x{ratio:.3f})")
        else:
            print(f"{level}: overhead x{ratio:.3f}, interval [{low:.3f}, {high:.3f}] excludes 1")
    if "MODEL" in found:
        _, low, high = found["MODEL"]
        print(model_verdict(low, high))


if __name__ == "__main__":
    main()
