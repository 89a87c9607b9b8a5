"""DLBricks over the catalogue: how unique are the layers, how much faster is generating
and benchmarking the bricks than benchmarking every model, and how close is the
constructed latency to the one `bench` measures?

For each granularity H, a fresh suite is generated from the models (every torch model of
the catalogue by default; ``--models`` takes architectures such as torchvision:googlenet
too), the models parsed once for every H (generate.ParseCache). Then ``--rounds`` rounds.
A round alternates the two sides step by step: a chunk of bricks (LoadGen SingleStream,
many per run, the empty brick beside them, holding the host slot as `bricks run` does),
then a share of the models, each through `bench`'s own path
(services/embedded/bench.run_bench: the host slot, the backend, LoadGen SingleStream, the
run stored), and so on until every brick and every model is measured; which side opens
each step swaps every round. Each side's host load is recorded per round. Neither side
runs in this process, which holds every parsed model: a round's bricks run in one
process of their own, as one `bricks run` would, and each model in a fresh one, as one
`bench` would (each first measures a small model, untimed, so no figure holds imports).
Printed per H:

- layers, unique sequences (and their share), generation seconds;
- per round the seconds and host load of each side;
- drift (drift.py): the comparison's (per round, the bricks' summed medians over the
  models', and the bricks' seconds over the models', slowest round over fastest) and the
  host's (each side's summed medians, slowest round over fastest, printed with each
  round's sums, not judged: a host moving both sides of a round alike leaves the ratios
  whole); when the comparison moved above 5 % no verdict is given, it says "void: drift
  X % > 5 %" instead, and none either when another program kept the host busy during a
  run ("void: the host was busy in N of M runs"). Rounds go on, up to ``--max-rounds``,
  until the newest ``--rounds`` of them agree; the verdict rests on those, and when
  earlier rounds were left out the drift over every round is printed with them (a host
  that slows for a while and settles is then measured once it has settled, never judged
  on its best rounds picked apart);
- the speedup: measuring every model (median seconds per round, each `bench` run whole)
  over generating plus measuring the bricks (generation + median seconds per round of
  `bricks run`'s work, brick loading included), and the same on LoadGen time alone;
- per model the constructed / measured ratio (sequential, floor-corrected, calibrated
  leave-one-out and held to construct.calibration_bound), each side the median over
  rounds, how many models are within 10 %, and each ratio's geometric mean.

    python benchmarks/dlbricks.py [--granularities 1,2,3,4] [--image-size 224]
        [--queries 50] [--min-duration 0.05] [--threads 1] [--rounds 3] [--max-rounds 6]
        [--models resnet18,torchvision:googlenet,...]

Run it alone on the machine: every figure is a latency.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from services.cli.command_kit import bench
from services.core.catalogue import list_catalogue
from services.core.manifest import ModelManifest
from services.inference.host_slot import HostSlot
from services.inference.measurement import PhaseClock
from services.workloads.bricks.construct import construct, fit_brick_cost, summarise
from services.workloads.bricks.drift import (
    DRIFT_LIMIT,
    Window,
    drift_of,
    median_over_rounds,
    newest_window,
)
from services.workloads.bricks.fx_allow import import_namespaces
from services.workloads.bricks.generate import BrickError, ModelInput, ParseCache, generate_suite
from services.workloads.bricks.measure import MeasureSettings, Timing, system_key
from services.workloads.bricks.memory import measure_memory_read
from services.workloads.bricks.models import model_input, recipe_name
from services.workloads.bricks.parse import ParseError
from services.workloads.bricks.results import SystemResults
from services.workloads.bricks.run import chunked, measure_chunks, with_host_load
from services.workloads.bricks.suite import list_bricks, read_recipe
from services.workloads.bricks.whole_model import bench_manifest, measure_whole
from shared.host_load import HostLoad
from shared.settings import Settings, get_settings

# A model whose construction is this close to its measurement counts as predicted.
WITHIN = 0.10


def catalogue_torch_models() -> list[str]:
    return [
        m.name
        for m in list_catalogue()
        if m.framework.name == "torch" and m.source.architecture is not None
    ]


@dataclass(frozen=True)
class Side:
    """One side of one round: medians (ms) by name, seconds, and the host meanwhile."""

    medians: dict[str, float]
    seconds: float  # wall, the wait for the host slot left out
    loadgen_s: float  # LoadGen runs alone
    # Median over the side's windows of other processes' CPU share (None: not measurable).
    other_cpu_share: float | None
    busy: int  # windows (LoadGen runs) the host was busy in
    windows: int
    floor_ms: float | None = None  # the bricks' empty brick
    faults_per_query: float | None = None  # minor page faults per LoadGen query
    # Whole models: each one's minor page faults per query (an allocator handing memory
    # back shows here: shared/allocator.py).
    faults_by_name: dict[str, float] = field(default_factory=dict)
    # Bricks: each one's weight bytes, and the memory read measured in the round (ms/MB).
    weight_bytes: dict[str, int | None] = field(default_factory=dict)
    memory_ms_per_mb: float | None = None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--granularities", default="1,2,3,4")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--min-duration", type=float, default=0.05)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3, help="rounds a verdict rests on")
    parser.add_argument(
        "--max-rounds",
        type=int,
        default=0,
        help="go on measuring, up to this many rounds, until the newest --rounds agree "
        "(default: --rounds + 3)",
    )
    parser.add_argument(
        "--models", default="", help="comma-separated specs; default: the catalogue"
    )
    args = parser.parse_args()
    if not 1 <= args.rounds <= 20:
        parser.error(f"--rounds: {args.rounds}; accepted: 1..20 (2 or more to judge drift)")
    # One round judges no drift, so more rounds could not settle it.
    max_rounds = args.max_rounds or (args.rounds + 3 if args.rounds >= 2 else 1)
    if not args.rounds <= max_rounds <= 20:
        parser.error(f"--max-rounds: {max_rounds}; accepted: --rounds ({args.rounds}) to 20")
    settings = MeasureSettings(args.queries, args.min_duration, args.threads)
    specs = [n for n in args.models.split(",") if n] or catalogue_torch_models()
    inputs = {spec: model_input(spec, image_size=args.image_size) for spec in specs}
    manifests = {spec: bench_manifest(spec, args.image_size) for spec in specs}
    parses = ParseCache()
    config = get_settings()
    print(
        f"system {system_key(args.threads)}; image {args.image_size}; {settings}; "
        f"{args.rounds} rounds (at most {max_rounds} until {args.rounds} agree); "
        f"host slot {config.host_slot_dir}; allocator "
        f"{config.allocator!r} (BENCHSTACK_ALLOCATOR; each measuring process prints below "
        "what it applied)"
    )
    for granularity in (int(h) for h in args.granularities.split(",")):
        with tempfile.TemporaryDirectory(prefix="benchstack-dlbricks-") as folder:
            report_granularity(
                Path(folder),
                granularity,
                inputs,
                manifests,
                parses,
                settings,
                config,
                args.rounds,
                max_rounds,
            )


def generate(
    suite: Path, granularity: int, inputs: dict[str, ModelInput], parses: ParseCache
) -> tuple[list[str], float]:
    """The specs whose bricks could be generated, and the seconds generation took."""
    usable = []
    start = time.perf_counter()
    for spec, model in inputs.items():
        try:
            generate_suite([model], granularity, suite, parses)
            usable.append(spec)
        except (ParseError, BrickError) as exc:
            print(f"  H={granularity}: {spec} left out: {exc}")
    return usable, time.perf_counter() - start


@dataclass
class SideTally:
    """One side of one round, added up step by step as the round alternates."""

    medians: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    loadgen_s: float = 0.0
    shares: list[float | None] = field(default_factory=list)
    busy: int = 0
    floors: list[float] = field(default_factory=list)
    faults: int = 0
    queries: int = 0
    faults_by_name: dict[str, float] = field(default_factory=dict)
    weight_bytes: dict[str, int | None] = field(default_factory=dict)
    memory_ms_per_mb: float | None = None

    def side(self) -> Side:
        return Side(
            self.medians,
            self.seconds,
            self.loadgen_s,
            _median_share(self.shares),
            self.busy,
            len(self.shares),
            statistics.median(self.floors) if self.floors else None,
            self.faults / self.queries if self.queries else None,
            self.faults_by_name,
            self.weight_bytes,
            self.memory_ms_per_mb,
        )


def measure_round(
    suite: Path,
    manifests: dict[str, ModelManifest],
    settings: MeasureSettings,
    config: Settings,
    *,
    bricks_first: bool,
) -> tuple[Side, Side]:
    """One round, bricks and models alternating: a chunk of bricks (as `bricks run`
    measures them: holding the host, the empty brick in every LoadGen run, loading
    included), then a share of the models through `bench`'s path (each run takes the host
    slot itself), and so on. A slow minute on the host then reaches both sides of the
    round alike, where measuring every brick and then every model put it on one side
    (this VM: medians over 1.6 s windows of one model moved between 76 and 103 ms).

    Each side runs in processes of its own, as a user's commands would: the round's
    bricks in one (one `bricks run`), each model in a fresh one (one `bench`). Measured
    in this process, which holds every parsed model and the generated suite, resnet18
    took 44-54 ms against 37-38 ms alone, and the bricks 11 % more. Each process measures
    a small model first, untimed (_warm_model, _warm_bricks)."""
    signatures = list_bricks(suite, "torch")
    chunks = chunked(signatures, floor_alone=True)
    named = [(recipe_name(spec), manifest) for spec, manifest in manifests.items()]
    bricks, models = SideTally(), SideTally()
    with _one_process() as bricks_process:
        _warm_bricks(bricks_process, suite, settings, config)
        _measure_memory(bricks_process, config, bricks)
        for number, chunk in enumerate(chunks):
            if bricks_first:
                _measure_chunk(bricks_process, suite, chunk, settings, config, bricks)
            _measure_models(named[number :: len(chunks)], settings, config, models)
            if not bricks_first:
                _measure_chunk(bricks_process, suite, chunk, settings, config, bricks)
    return bricks.side(), models.side()


def _one_process() -> ProcessPoolExecutor:
    """A process started afresh (spawned: nothing of this one's memory), one at a time."""
    return ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))


# What a process measures once before it is timed: what `run_bench` and the bricks'
# harness import on first use (LoadGen, the backend, the store) would otherwise fall into
# the first figure of a fresh process, where a process that measured before has them.
WARM_UP_MODEL = "torchvision:squeezenet1_1"
WARM_UP_SIDE = 32


def _warm_settings(settings: MeasureSettings) -> MeasureSettings:
    return MeasureSettings(1, 0.01, settings.threads)


def _warm_bricks(
    process: ProcessPoolExecutor, suite: Path, settings: MeasureSettings, config: Settings
) -> None:
    process.submit(warm_bricks_process, suite, _warm_settings(settings), config).result()


def warm_bricks_process(suite: Path, settings: MeasureSettings, config: Settings) -> None:
    """In the bricks' process, untimed: the empty brick measured, and every namespace a
    brick may name imported (torchvision.ops: 1.5-2.4 s, which fell into the first chunk
    naming it, where the models' processes had imported torchvision warming up)."""
    import_namespaces()
    measure_chunk_alone(suite, [], settings, config)


def _warm_model(process: ProcessPoolExecutor, settings: MeasureSettings, config: Settings) -> None:
    warm = bench_manifest(WARM_UP_MODEL, WARM_UP_SIDE)
    process.submit(measure_whole, warm, _warm_settings(settings), config, bench=bench).result()


def _measure_memory(process: ProcessPoolExecutor, config: Settings, tally: SideTally) -> None:
    """The memory read the cold-weights construction uses, as `bricks run` measures it for
    a system (once there; here each round), in the bricks' process: its seconds count."""
    read, seconds = process.submit(memory_read_alone, config).result()
    tally.memory_ms_per_mb = float(read["ms_per_mb"])
    tally.seconds += seconds


def memory_read_alone(config: Settings) -> tuple[dict[str, float | int], float]:
    """In the bricks' process, holding the host: the memory read and the seconds it took."""
    with HostSlot.of(config).measuring(f"dlbricks-memory-{uuid.uuid4()}"):
        start = time.perf_counter()
        read = measure_memory_read()
        return read, time.perf_counter() - start


@dataclass(frozen=True)
class ChunkRun:
    """What the bricks' process measured of one chunk, holding the host as `bricks run`
    does (the slot taken in that process, so its allocator is the one set)."""

    floor: Timing
    timings: dict[str, Timing]
    load: HostLoad
    seconds: float  # loading and measuring, the wait for the host left out
    minor_faults: int
    allocator: dict[str, str]


def measure_chunk_alone(
    suite: Path, chunk: list[str], settings: MeasureSettings, config: Settings
) -> ChunkRun:
    """In the bricks' process: one chunk loaded and measured (with_host_load samples
    the host meanwhile)."""
    clock = PhaseClock()
    with HostSlot.of(config).measuring(f"dlbricks-{uuid.uuid4()}") as use, clock.phase("chunk"):
        (floor, timings), load = next(
            with_host_load(measure_chunks(suite, chunk, settings, "torch", floor_alone=True))
        )
    seconds, faults = clock.timings["chunk_s"], int(clock.timings["chunk_minor_faults"])
    return ChunkRun(floor, timings, load, seconds, faults, use.allocator)


def _measure_chunk(
    process: ProcessPoolExecutor,
    suite: Path,
    chunk: list[str],
    settings: MeasureSettings,
    config: Settings,
    tally: SideTally,
) -> None:
    """The next chunk of bricks, measured in the bricks' process."""
    run = process.submit(measure_chunk_alone, suite, chunk, settings, config).result()
    _applied(run.allocator)
    tally.seconds += run.seconds
    tally.floors.append(run.floor.median_ms)
    tally.medians |= {s: t.median_ms for s, t in run.timings.items()}
    tally.weight_bytes |= {s: t.weight_bytes for s, t in run.timings.items()}
    tally.loadgen_s += run.floor.seconds + sum(t.seconds for t in run.timings.values())
    tally.shares.append(run.load.other_cpu_share)
    tally.busy += bool(run.load.busy)
    tally.faults += run.minor_faults
    tally.queries += run.floor.queries + sum(t.queries for t in run.timings.values())


_ALLOCATORS_SEEN: set[str] = set()


def _applied(allocator: dict[str, str]) -> None:
    """Print what a measuring process applied, the first time it is seen."""
    text = allocator.get("applied", "not recorded")
    if text not in _ALLOCATORS_SEEN:
        _ALLOCATORS_SEEN.add(text)
        print(f"  allocator in a measuring process: {text}")


def _measure_models(
    group: list[tuple[str, ModelManifest]],
    settings: MeasureSettings,
    config: Settings,
    tally: SideTally,
) -> None:
    for name, manifest in group:
        with _one_process() as process:
            _warm_model(process, settings, config)
            run = process.submit(measure_whole, manifest, settings, config, bench=bench).result()
        tally.medians[name] = run.median_ms
        tally.seconds += run.seconds - float(run.host.get("waited_for_host_s", 0.0))
        tally.loadgen_s += run.loadgen_s
        tally.shares.append((run.host.get("load") or {}).get("other_cpu_share"))
        tally.busy += run.busy
        tally.faults += run.minor_faults
        tally.queries += run.queries
        tally.faults_by_name[name] = run.minor_faults / max(run.queries, 1)
        _applied(run.host.get("allocator") or {})


def report_granularity(
    suite: Path,
    granularity: int,
    inputs: dict[str, ModelInput],
    manifests: dict[str, ModelManifest],
    parses: ParseCache,
    settings: MeasureSettings,
    config: Settings,
    rounds: int,
    max_rounds: int,
) -> None:
    usable, generation_s = generate(suite, granularity, inputs, parses)
    if not usable:
        print(f"\nH={granularity}: no model could be cut into bricks; nothing to measure")
        return
    names = {spec: recipe_name(spec) for spec in usable}
    recipes = {names[spec]: read_recipe(suite, names[spec]) for spec in usable}
    layers = sum(r["layers"] for r in recipes.values())
    sequences = sum(len(r["steps"]) for r in recipes.values())
    unique = len(list_bricks(suite, "torch"))
    print(
        f"\nH={granularity}: {len(usable)} models, {layers} layers, {sequences} sequences, "
        f"{unique} unique ({unique / max(sequences, 1):.1%}); generation {generation_s:.1f} s"
    )
    wanted = {spec: manifests[spec] for spec in usable}
    brick_rounds: list[Side] = []
    model_rounds: list[Side] = []
    for number in range(max_rounds):
        # Which side opens each step swaps every round: a trend on the host reaches both
        # sides alike.
        b, m = measure_round(suite, wanted, settings, config, bricks_first=number % 2 == 0)
        brick_rounds.append(b)
        model_rounds.append(m)
        print(
            f"  round {number + 1}: bricks {b.seconds:.1f} s ({_host(b)}); "
            f"every model {m.seconds:.1f} s, LoadGen {m.loadgen_s:.1f} s ({_host(m)})"
        )
        window = newest_window(
            [m.medians for m in model_rounds],
            [b.medians for b in brick_rounds],
            rounds,
            _seconds(model_rounds, brick_rounds),
        )
        void = _void(window, brick_rounds, model_rounds)
        if window.size == rounds and not void:
            break  # the newest rounds agree: the verdict rests on them
    if window.left_out:
        every = drift_of(
            [m.medians for m in model_rounds],
            [b.medians for b in brick_rounds],
            _seconds(model_rounds, brick_rounds),
        )
        print(f"  drift over every round measured: {every.describe()}")
    print(f"  {window.describe()} (the newest {rounds} are judged; at most {max_rounds})")
    drift = window.drift
    brick_rounds, model_rounds = brick_rounds[window.start :], model_rounds[window.start :]
    print(f"  drift: {drift.describe()}")
    bricks_s = statistics.median(b.seconds for b in brick_rounds)
    models_s = statistics.median(m.seconds for m in model_rounds)
    bricks_loadgen = statistics.median(b.loadgen_s for b in brick_rounds)
    models_loadgen = statistics.median(m.loadgen_s for m in model_rounds)
    print(
        f"  seconds (median per round): generation {generation_s:.1f} + bricks {bricks_s:.1f} "
        f"vs every model {models_s:.1f} (LoadGen alone: bricks {bricks_loadgen:.1f}, "
        f"models {models_loadgen:.1f})"
    )
    if void:
        print(f"  speedup: {void}")
    else:
        print(
            f"  speedup (generate + run vs every model): "
            f"x{models_s / (generation_s + bricks_s):.2f}; LoadGen alone, generation "
            f"included: x{models_loadgen / (generation_s + bricks_loadgen):.2f}; bricks run "
            f"alone: x{models_s / bricks_s:.2f}"
        )
    weights = brick_rounds[0].weight_bytes  # what a brick holds is the same every round
    memory = [b.memory_ms_per_mb for b in brick_rounds if b.memory_ms_per_mb is not None]
    results = SystemResults(
        system_key(settings.threads),
        {
            s: {"median_ms": ms, "weight_bytes": weights.get(s)}
            for s, ms in median_over_rounds([b.medians for b in brick_rounds]).items()
        },
        {"median_ms": statistics.median(b.floor_ms or 0.0 for b in brick_rounds)},
        memory={"ms_per_mb": statistics.median(memory)} if memory else None,
    )
    if memory:
        print(
            f"  memory read (the bricks' process, median over rounds): "
            f"{statistics.median(memory) * 1e3:.1f} us per MB "
            f"({1 / statistics.median(memory):.1f} GB/s; rounds {_range(memory, 1e3)} us)"
        )
    measured = median_over_rounds([m.medians for m in model_rounds])
    rows = score(recipes, results, measured)
    faults = median_over_rounds([m.faults_by_name for m in model_rounds])
    print(
        f"  {'model (ms)':<20} {'measured':>9} {'seq':>9} {'floor':>9} {'cold':>9} {'loo':>9} "
        f"{'faults/query':>12}"
    )
    for name, row in rows.items():
        print(
            f"  {name:<20} "
            + " ".join(f"{_ms(v):>9}" for v in row)
            + f" {faults.get(name, 0):>12.0f}"
        )
    if void:
        print(f"  constructed / measured: {void}")
        return
    print(f"  {'model':<20} {'seq/meas':>9} {'floor/meas':>11} {'cold/meas':>10} {'loo/meas':>9}")
    for name, (meas, seq, floor, cold, loo) in rows.items():
        print(
            f"  {name:<20} {_ms(_over(seq, meas)):>9} {_ms(_over(floor, meas)):>11} "
            f"{_ms(_over(cold, meas)):>10} {_ms(_over(loo, meas)):>9}"
        )
    for label, column in (
        ("sequential", 1),
        ("floor-corrected", 2),
        ("cold weights", 3),
        ("calibrated LOO", 4),
    ):
        ratios = {name: _over(row[column], row[0]) for name, row in rows.items()}
        within = sum(1 for r in ratios.values() if r is not None and abs(r - 1) <= WITHIN)
        # Every model is counted: one whose figure is missing or not above zero is named.
        summary = summarise(ratios, {name: "no figure" for name in ratios})
        print(
            f"  {label} / measured: geomean {summary.describe()}; within {WITHIN:.0%} "
            f"on {within} of {len(ratios)}"
        )


def _seconds(model_rounds: list[Side], brick_rounds: list[Side]) -> list[tuple[float, float]]:
    """Per round, the seconds each side took (models, bricks): the speedup's inputs."""
    return [(m.seconds, b.seconds) for m, b in zip(model_rounds, brick_rounds, strict=True)]


def _void(window: Window, brick_rounds: list[Side], model_rounds: list[Side]) -> str | None:
    """Why the window's rounds give no verdict: drift, or a busy host in one of them."""
    used = slice(window.start, None)
    return window.drift.void_reason(DRIFT_LIMIT) or _busy_reason(
        brick_rounds[used] + model_rounds[used]
    )


def _busy_reason(sides: list[Side]) -> str | None:
    """Why no verdict may be given when another program took the CPUs during a run."""
    busy, runs = sum(s.busy for s in sides), sum(s.windows for s in sides)
    return f"void: the host was busy in {busy} of {runs} runs" if busy else None


def _median_share(shares: list[float | None]) -> float | None:
    known = [s for s in shares if s is not None]
    return float(statistics.median(known)) if known else None


def _host(side: Side) -> str:
    share = "-" if side.other_cpu_share is None else f"{side.other_cpu_share:.0%}"
    faults = "-" if side.faults_per_query is None else f"{side.faults_per_query:,.0f}"
    return (
        f"other processes {share} of the CPUs (median), busy in {side.busy} of {side.windows} "
        f"runs; {faults} page faults per query"
    )


def _range(values: list[float], scale: float) -> str:
    return f"{min(values) * scale:.1f}-{max(values) * scale:.1f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def score(
    recipes: dict[str, dict[str, Any]], results: SystemResults, measured: dict[str, float]
) -> dict[str, tuple[float, float | None, float | None, float | None, float | None]]:
    """Per model: measured ms and four constructions in ms (sequential, floor-corrected,
    cold weights, calibrated; None where the construction has no figure). The calibrated
    one is fitted on every other model and held to calibration_bound, as `bricks
    calibrate` does."""
    built = {name: construct(recipe, results) for name, recipe in recipes.items()}
    brick_ms = [float(t["median_ms"]) for t in results.bricks.values()]
    rows = {}
    for name, construction in built.items():
        others = [n for n in built if n != name]
        loo = None
        if others:
            cost = fit_brick_cost(
                [built[n] for n in others], [measured[n] for n in others], brick_ms
            )
            fitted = {"ms_per_brick": cost.ms_per_brick, "fitted_on": others}
            loo = construct(recipes[name], replace(results, brick_cost=fitted)).calibrated_ms
        rows[name] = (
            measured[name],
            construction.sequential_ms,
            construction.floor_corrected_ms,
            construction.cold_weights_ms,
            loo,
        )
    return rows


def _over(value: float | None, measured: float) -> float | None:
    return None if value is None else value / measured


if __name__ == "__main__":
    main()
