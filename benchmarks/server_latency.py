"""Does a lightly loaded Server answer as fast as SingleStream? Side by side, per model.

Each round, through `bench`'s own path (services/embedded/bench.run_bench: the host slot,
the backend, LoadGen, the host's load recorded, the run stored), at batch size 1 and the
same intra-op threads on both sides:
  offline       - the peak: samples/s of an Offline run;
  single-stream - LoadGen's p50;
  server        - LoadGen's p50 at ``--load`` (default 10 %) of that round's peak;
  floor         - LoadGen alone at that Server rate: a SUT that completes each query in
                  its callback (no benchstack code), with the timer slack runs get
                  (loadgen/timer_slack.py). LoadGen times a Server query from its
                  scheduled time and sleeps until then, so the host's wake-up latency is
                  in every Server figure and in none of SingleStream's;
  idle          - (models that compute) the backend's predict() on one sample, back to
                  back and after sleeping the Server's mean gap between queries: what the
                  host's idleness alone does to a call (a busy core keeps its caches and
                  its clock; an idle one may lose both);
SingleStream and Server swap order every round, so a trend on the host reaches both.
Printed per model: each round's p50s and host load, the medians over rounds, the ratio
server / single-stream (target <= 1.1) with its range over rounds. No verdict is given
when the host was busy in any run, or with fewer than 2 rounds. (A lightly loaded Server
runs most queries on LoadGen's issue thread: sut.BatchingSUT._may_run_inline.)

    python benchmarks/server_latency.py [--models null:resnet18,torch:resnet18]
        [--duration 5] [--rounds 3] [--load 0.1] [--threads 1]

Run it alone on the machine: every figure is a latency.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from services.core.catalogue import resolve_model
from services.core.figures import latency_ms
from services.core.loadgen_logs import parse_summary
from services.core.request import RunRequest
from services.core.scenario import ScenarioConfig
from services.core.stored_report import load_loadgen_report
from services.embedded.bench import run_bench
from services.inference.backend_interface import BackendOptions
from services.inference.backends.registry import create_backend
from services.inference.loadgen.timer_slack import precise_sleeps
from shared.settings import get_settings

TARGET = 1.1
MAX_ROUNDS = 20
MAX_DURATION_S = 120.0


@dataclass(frozen=True)
class Figure:
    """One run: its headline figure (samples/s or p50 ms) and the host meanwhile."""

    value: float
    busy: bool
    other_cpu_share: float | None


def run(framework: str, model: str, scenario: ScenarioConfig, threads: int) -> dict[str, Any]:
    request = RunRequest(
        model=model,
        framework=framework,
        scenario=scenario.scenario,
        settings=scenario.model_dump(exclude_none=True, exclude={"scenario"}),
        batch_size=1,
        threads=threads or None,
    )
    return run_bench(request, get_settings())


def figure(report: dict[str, Any], value: float) -> Figure:
    host = load_loadgen_report(report).host
    load = host.get("load") or {}
    return Figure(value, bool(host.get("busy")), load.get("other_cpu_share"))


def loadgen_floor_p50_ms(qps: float, duration_s: float) -> float:
    """Server p50 (ms) of LoadGen with a SUT that completes each query in its callback."""
    import mlperf_loadgen as lg

    settings = lg.TestSettings()
    settings.scenario = lg.TestScenario.Server
    settings.mode = lg.TestMode.PerformanceOnly
    settings.server_target_qps = qps
    settings.min_duration_ms = int(duration_s * 1000)
    settings.min_query_count = 1

    def issue(queries: list[Any]) -> None:
        lg.QuerySamplesComplete([lg.QuerySampleResponse(q.id, 0, 0) for q in queries])

    with precise_sleeps(), tempfile.TemporaryDirectory(prefix="benchstack-floor-") as folder:
        sut = lg.ConstructSUT(issue, lambda: None)
        qsl = lg.ConstructQSL(16, 16, lambda samples: None, lambda samples: None)
        log = lg.LogSettings()
        log.log_output.outdir = folder
        log.log_output.copy_summary_to_stdout = False
        try:
            lg.StartTestWithLogSettings(sut, qsl, settings, log)
        finally:
            lg.DestroyQSL(qsl)
            lg.DestroySUT(sut)
        with open(f"{folder}/mlperf_log_summary.txt") as summary:
            return float(parse_summary(summary.read())["50.00 percentile latency (ns)"]) / 1e6


def idle_penalty_ms(
    framework: str, model: str, gap_s: float, threads: int, calls: int = 7
) -> tuple[float, float]:
    """Median ms of one predict() back to back, and after sleeping ``gap_s`` each time."""
    import numpy as np

    manifest = resolve_model(model)
    backend = create_backend(framework, BackendOptions(intra_op_threads=threads))
    backend.load(manifest)
    shape = (1, *manifest.inputs[0].shape)
    batch = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    backend.warm_up(batch)

    def median_call(sleep_s: float) -> float:
        took = []
        for _ in range(calls):
            time.sleep(sleep_s)
            start = time.perf_counter()
            backend.predict(batch)
            took.append((time.perf_counter() - start) * 1000)
        return float(statistics.median(took))

    try:
        return median_call(0.0), median_call(gap_s)
    finally:
        backend.close()


def one_round(
    framework: str, model: str, duration_s: float, load: float, threads: int, swap: bool
) -> tuple[Figure, Figure, Figure, float]:
    """(peak samples/s, SingleStream p50 ms, Server p50 ms, LoadGen's floor p50 ms at
    the Server rate) of one round."""
    offline = run(
        framework, model, ScenarioConfig(scenario="offline", min_duration_s=duration_s), threads
    )
    peak = figure(offline, float(offline["performance"]["samples_per_second"]))
    single = ScenarioConfig(scenario="single-stream", min_duration_s=duration_s)
    server = ScenarioConfig(
        scenario="server", min_duration_s=duration_s, target_qps=max(1.0, load * peak.value)
    )
    order = (
        [("server", server), ("single", single)]
        if swap
        else [("single", single), ("server", server)]
    )
    p50s = {}
    for name, config in order:
        report = run(framework, model, config, threads)
        p50s[name] = figure(report, latency_ms(report, "p50"))
    floor = loadgen_floor_p50_ms(server.target_qps or 1.0, min(duration_s, 5.0))
    return peak, p50s["single"], p50s["server"], floor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="null:resnet18,torch:resnet18")
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--load", type=float, default=0.1)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if not 1 <= args.rounds <= MAX_ROUNDS:
        parser.error(f"--rounds: {args.rounds}; accepted: 1..{MAX_ROUNDS}")
    if not 0 < args.duration <= MAX_DURATION_S:
        parser.error(f"--duration: {args.duration}; accepted: above 0 up to {MAX_DURATION_S:g} s")
    if not 0 < args.load <= 1:
        parser.error(f"--load: {args.load}; accepted: above 0 up to 1 (a share of the peak)")
    for spec in args.models.split(","):
        framework, _, model = spec.partition(":")
        if not model:
            parser.error(f"--models: {spec!r}; accepted: FRAMEWORK:MODEL, e.g. null:resnet18")
        report_model(framework, model, args)


def report_model(framework: str, model: str, args: argparse.Namespace) -> None:
    print(
        f"\n{framework}:{model}  batch 1, {args.threads} thread(s), {args.duration:g} s a run, "
        f"Server at {args.load:.0%} of each round's Offline peak"
    )
    rounds: list[tuple[Figure, Figure, Figure]] = []
    floors: list[float] = []
    for number in range(args.rounds):
        peak, single, server, floor = one_round(
            framework, model, args.duration, args.load, args.threads, swap=number % 2 == 1
        )
        rounds.append((peak, single, server))
        floors.append(floor)
        print(
            f"  round {number + 1}: peak {peak.value:.1f}/s; p50 single-stream "
            f"{_ms(single.value)}, server {_ms(server.value)} (LoadGen alone {_ms(floor)}); "
            f"host busy in {sum(f.busy for f in (peak, single, server))} of 3 runs "
            f"(other processes {_share([peak, single, server])})"
        )
    single_p50 = statistics.median(r[1].value for r in rounds)
    server_p50 = statistics.median(r[2].value for r in rounds)
    ratio = server_p50 / single_p50
    spread = [r[2].value / r[1].value for r in rounds]
    print(
        f"  median p50: single-stream {_ms(single_p50)}, server {_ms(server_p50)}; "
        f"server / single-stream x{ratio:.2f} (rounds: {min(spread):.2f}..{max(spread):.2f}); "
        f"LoadGen alone at the Server rate {_ms(statistics.median(floors))}"
    )
    if framework != "null":
        gap_s = 1 / (args.load * statistics.median(r[0].value for r in rounds))
        warm, idle = idle_penalty_ms(framework, model, min(gap_s, 2.0), args.threads)
        print(
            f"  predict() alone: back to back {_ms(warm)}, after {min(gap_s, 2.0) * 1000:.0f} ms "
            f"idle {_ms(idle)} (x{idle / warm:.2f}): the host's idleness, not the SUT's"
        )
    busy = sum(f.busy for r in rounds for f in r)
    if busy or args.rounds < 2:
        why = f"the host was busy in {busy} runs" if busy else "one round gives no spread"
        print(f"  verdict: none ({why})")
    else:
        met = "met" if ratio <= TARGET else "not met"
        print(f"  verdict: x{ratio:.2f} against a target of <= x{TARGET}: {met}")


def _ms(value: float) -> str:
    return f"{value * 1000:.1f} us" if value < 1 else f"{value:.2f} ms"


def _share(figures: list[Figure]) -> str:
    known = [f.other_cpu_share for f in figures if f.other_cpu_share is not None]
    return f"{statistics.median(known):.0%} of the CPUs" if known else "not measurable"


if __name__ == "__main__":
    main()
