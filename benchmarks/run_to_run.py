"""Run-to-run variation of benchstack's Offline figure: the noise floor of every comparison.

Runs the same Offline LoadGen test ``--repeats`` times (default 5) in one process, on one
loaded model and one set of prepared tensors, and prints samples/s per run with its
validity and stability verdict, then min / median / max and the coefficient of variation
(target <= 3 % on a quiet machine). A calibration run first fixes LoadGen's expected QPS,
so every repeat issues the same number of samples.

    python benchmarks/run_to_run.py [--model resnet18] [--batch 8] [--duration 10]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from services.core.campaigns.repeats import Spread
from services.core.catalogue import resolve_model
from services.core.scenario import ScenarioConfig
from services.inference.backend_interface import BackendOptions
from services.inference.backends.registry import create_backend
from services.inference.run import RunOutcome, execute_run
from services.preprocess.datasets import resolve_dataset
from services.preprocess.pipeline import preprocess


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--framework", default=None, help="default: the manifest's")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per run")
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads (0: default)")
    parser.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N")
    args = parser.parse_args()

    manifest = resolve_model(args.model)
    backend = create_backend(
        args.framework or manifest.framework.name,
        BackendOptions(device=args.device, intra_op_threads=args.threads),
    )
    backend.load(manifest)
    with tempfile.TemporaryDirectory() as tmp:
        dataset = resolve_dataset("synthetic", count=args.samples, seed=0, cache_dir=Path(tmp))
        tensors = preprocess(dataset.samples, manifest.inputs[0]).tensors

        def run(scenario: ScenarioConfig, index: int) -> RunOutcome:
            log_dir = Path(tmp) / f"run-{index}"
            return execute_run(
                manifest=manifest,
                backend=backend,
                scenario=scenario,
                batch_size=args.batch,
                log_dir=log_dir,
                tensors=tensors,
            )

        # Two short calibration runs (the first also warms caches and thread pools); the
        # faster one sets LoadGen's expected QPS.
        short = ScenarioConfig(min_duration_s=max(2.0, args.duration / 4))
        expected = max(run(short, -i).report.samples_per_second for i in (1, 2))
        print(
            f"{manifest.ref} batch {args.batch}, {args.duration:g} s per run; "
            f"calibration {expected:.2f} samples/s"
        )
        # 25 % above the calibration, so a faster repeat still meets LoadGen's min duration.
        scenario = ScenarioConfig(min_duration_s=args.duration, target_qps=1.25 * expected)
        values = []
        for index in range(args.repeats):
            outcome = run(scenario, index)
            sps = outcome.report.samples_per_second
            values.append(sps)
            stability = outcome.stability.verdict if outcome.stability else "?"
            print(
                f"  run {index + 1}: {sps:9.2f} samples/s  "
                f"{outcome.report.validity.result:8s} {stability}"
            )
    backend.close()
    spread = Spread.from_values(values)
    print(
        f"min {spread.min:.2f}  median {spread.median:.2f}  max {spread.max:.2f}  "
        f"samples/s over {spread.count} runs"
    )
    print(f"coefficient of variation: {spread.cv:.2%} (target <= 3 % on a quiet machine)")


if __name__ == "__main__":
    main()
