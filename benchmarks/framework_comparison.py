"""Same model, every framework, one sitting: Offline samples/s on this machine.

resnet50 through torch eager, TorchScript, ONNX Runtime (exported from the same torch
model), TensorFlow (Keras ResNet50, the same architecture) and Triton's KServe-V2 protocol
over loopback (MLServer in its own virtualenv, serving the exported ONNX file with ONNX
Runtime). Each run is a full benchstack run (LoadGen Offline, same synthetic images, same
batch size), stored in a throw-away data folder. Prints samples/s and the ratio to eager.

    python benchmarks/framework_comparison.py [--model resnet50] [--batch-size 8] [--duration 20]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

# The KServe-V2 server helper lives with the tests; make the repository root importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.core.catalogue import resolve_model
from services.core.request import RunRequest
from services.core.scenario import ScenarioConfig
from services.core.stored_report import load_loadgen_report
from services.embedded.bench import run_bench
from services.inference.backends.convert import convert_to_onnx
from shared.settings import Settings
from tests.support.kserve_server import KServeServer, ServedModel, ensure_venv


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--keras-model", default="resnet50_keras")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--samples", type=int, default=32)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="benchstack-compare-") as tmp:
        os.environ["BENCHSTACK_DATA_DIR"] = tmp
        settings = Settings(data_dir=Path(tmp))
        scenario = ScenarioConfig(scenario="offline", min_duration_s=args.duration)
        converted = convert_to_onnx(resolve_model(args.model), Path(tmp) / "onnx")
        ensure_venv()
        server = KServeServer([ServedModel(args.model, converted.path)], Path(tmp) / "mlserver")
        server.start()
        try:
            variants = [
                ("torch eager", args.model, "torch", {"mode": "eager"}),
                ("torch TorchScript", args.model, "torch", {"mode": "torchscript"}),
                ("onnxruntime", args.model, "onnxruntime", {}),
                ("tensorflow (Keras)", args.keras_model, "tensorflow", {}),
                (
                    "triton over loopback (grpc)",
                    args.model,
                    "triton",
                    {"url": server.grpc_url, "protocol": "grpc", "model_name": args.model},
                ),
            ]
            rows = []
            for label, model, framework, extra in variants:
                report = run_bench(
                    RunRequest(
                        model=model,
                        framework=framework,
                        scenario=scenario.scenario,
                        settings=scenario.model_dump(exclude_none=True, exclude={"scenario"}),
                        batch_size=args.batch_size,
                        samples=args.samples,
                        backend_options=extra,
                    ),
                    settings,
                )
                typed = load_loadgen_report(report)
                rate, validity = typed.perf.samples_per_second, typed.validity
                rows.append((label, rate, validity))
                print(f"{label:30s} {rate:8.2f} samples/s  {validity}", flush=True)
        finally:
            server.stop()
    eager = rows[0][1]
    print(
        f"\n{args.model}, Offline, batch {args.batch_size}, {args.duration:g} s each; "
        "ratio to torch eager:"
    )
    for label, rate, validity in rows:
        print(f"  {label:30s} {rate:8.2f} samples/s  x{rate / eager:5.2f}  {validity}")


if __name__ == "__main__":
    main()
