"""Time a brick (or a whole model) through the harness every benchmark uses: LoadGen in
SingleStream, the SUT calling a Backend, latencies read from the SUT's own clock.

A query is one call of the module on its recorded input shapes (batch included): the
QSL's samples only pace the queries, so the brick sees the same tensors on every call.
Bricks and the end-to-end model go through the same code, which is what makes a sum of
bricks comparable with the model's own latency. A torch brick is an eager fx module read
from its .torchfx file (fx_brick), or an exported program's module, its checks taken out
(``unguarded``), for a brick kept as .pt2.
"""

from __future__ import annotations

import platform
import re
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from services.core.scenario import ScenarioConfig
from services.inference.backend_interface import Backend, BackendError
from services.inference.loadgen.qsl import TensorQSL
from services.inference.loadgen.runner import run_loadgen
from services.workloads.bricks.fx_brick import decode_brick, encode_brick

# Bounds on what a user may ask of one measurement.
MAX_QUERIES = 100_000
MAX_MIN_DURATION_S = 600.0
MAX_THREADS = 1024
WARM_UP_CALLS = 3
MAX_ROUNDS = 5
PASSES = 5  # passes over the modules in one run (BurstSchedule)
# How bricks are called (in bursts, eager fx modules read from .torchfx, a max pool on
# its model's recorded values: recorded_values), part of every system key: a figure
# measured another way (drawn at random, guarded: 16 % slower at H=1; h2: torch.export's
# modules, unguarded; h3: every brick on noise, googlenet's max pools 37 % slower) is
# never reused beside these.
HARNESS = "h4"


@dataclass(frozen=True)
class Timing:
    median_ms: float
    mean_ms: float
    p90_ms: float
    queries: int
    seconds: float  # wall time the measurement took, warm-up and LoadGen set-up included
    # A brick's parameters and buffers (memory.weight_bytes); None where not counted.
    weight_bytes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class MeasureSettings:
    min_queries: int = 50
    min_duration_s: float = 0.05
    threads: int = 0  # 0: torch's default

    def __post_init__(self) -> None:
        if not 1 <= self.min_queries <= MAX_QUERIES:
            raise ValueError(f"queries: {self.min_queries}; accepted: 1..{MAX_QUERIES}")
        if not 0 < self.min_duration_s <= MAX_MIN_DURATION_S:
            raise ValueError(
                f"min-duration: {self.min_duration_s} s; accepted: above 0 up to "
                f"{MAX_MIN_DURATION_S:g} s"
            )
        if not 0 <= self.threads <= MAX_THREADS:
            raise ValueError(
                f"threads: {self.threads}; accepted: 0 (torch's default) to {MAX_THREADS}"
            )


# What a query calls: a torch module, or any callable with the same contract (an ONNX
# brick's onnxruntime session, measure_onnx.OnnxCallable), with the inputs it is called on.
Item = tuple[Callable[..., Any], tuple[Any, ...]]


class ModulesBackend(Backend):
    """Torch modules (or other callables) with their fixed inputs, as one SUT backend.

    Before ``start_measurement`` (warm-up, calibration) a sample's value says which module
    a query runs. From then on the k-th query runs ``schedule.module(k)``, whatever sample
    LoadGen drew, and each call's module is noted in order. SingleStream at batch 1
    on a synchronous backend runs one query at a time, so the k-th call noted is the k-th
    latency the SUT recorded."""

    name = "bricks"

    def __init__(self, items: Sequence[Item]) -> None:
        super().__init__()
        self.items = list(items)
        self.schedule = BurstSchedule(tuple(range(len(self.items))), 1, 1)
        self.measuring = False
        self.order: list[int] = []
        self._output = np.zeros((1, 1), np.float32)
        # Inference mode is per thread; LoadGen calls predict from a thread of each run, so
        # the mode is entered once per thread and kept (a `with` per call cost ~5 us of a
        # ~50 us floor). Thread-local, not keyed by thread id: a later run's thread may get
        # an ended one's id, and must enter the mode itself.
        self._thread = threading.local()

    def version(self) -> str:
        return str(torch.__version__)

    def load(self, manifest: Any) -> None:
        """Nothing to load: the modules are given."""

    def start_measurement(self) -> None:
        self.measuring = True
        self.order = []

    def _inference_mode(self) -> None:
        if getattr(self._thread, "guard", None) is None:
            guard = torch.inference_mode()
            guard.__enter__()
            self._thread.guard = guard  # kept with the thread; it ends with the run

    def predict(self, batch: np.ndarray) -> np.ndarray:
        self._inference_mode()
        items, order = self.items, self.order
        for value in batch[:, 0]:
            if self.measuring:
                index = self.schedule.module(len(order))
                order.append(index)
            else:
                index = int(value)
            module, inputs = items[index]
            module(*inputs)
        return self._output if len(batch) == 1 else np.zeros((len(batch), 1), np.float32)


class _Empty(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 0  # one trivial operator, as a brick holds at least one


def empty_torch_brick(threads: int = 0) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The torch floor (its threads are the process's, set by the measurement)."""
    return empty_brick()


def empty_brick() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """A brick that computes nothing worth timing, written and read as a .torchfx brick
    is: its latency is the floor each brick's latency includes."""
    example = (torch.zeros(1),)
    return decode_brick(encode_brick(torch.fx.symbolic_trace(_Empty()))), example


def unguarded(module: nn.Module) -> nn.Module:
    """An exported program's module (a brick kept as .pt2: torchfx could not hold it, or
    an older suite's) without the checks it runs on every call: the input
    constraint hook, the ``_guards_fn`` call in its graph and the pytree flatten and
    unflatten around it (plain codegen). Measured alone on this machine: an empty brick's
    call took 21 us exported and 9 us so (4 us eager); a 3x3 conv on 8x8x8 took 70 us
    guarded, 42 us without the hook alone, 23 us eager. A model called eagerly pays
    nothing like them, and a brick pays them on every query. A brick is only ever called
    on the inputs recorded when it was cut, so the checks can never fail here; its outputs
    come back as a tuple, which measuring ignores."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if getattr(hook, "__name__", "") == "_check_input_constraints_pre_hook":
            del module._forward_pre_hooks[key]
    if isinstance(module, torch.fx.GraphModule):
        graph = module.graph
        for node in list(graph.nodes):
            if node.op == "call_module" and node.target == "_guards_fn" and not node.users:
                graph.erase_node(node)
        graph.set_codegen(torch.fx.graph.CodeGen())
        module.recompile()
    return module


def system_key(threads: int, framework: str = "torch") -> str:
    """Which system a figure belongs to: host, the brick format's runtime and its version,
    device and threads (formats.BrickFormat.system). The runtime is part of the key, so
    each format's bricks keep their own results file and their own floor (an ONNX brick's
    floor is an empty onnxruntime call). ``HARNESS`` ends the key."""
    from services.workloads.bricks.formats import brick_format

    brick = brick_format(framework)
    text = f"{platform.node()}-{brick.call(brick.system, threads)}-{HARNESS}"
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)


def torch_system(threads: int) -> str:
    """A torch brick's runtime in the system key: torch, its version and threads."""
    return f"torch{torch.__version__}-cpu-t{threads or torch.get_num_threads()}"


def time_module(
    module: Callable[..., Any], inputs: tuple[Any, ...], settings: MeasureSettings
) -> Timing:
    return time_modules([(module, inputs)], settings)[0]


@dataclass(frozen=True)
class BurstSchedule:
    """The order a run calls its modules in: ``passes`` passes over ``modules``, each
    module called ``burst`` times in a row per pass (computed per query, not listed: a
    run may hold 200 bricks x 100,000 queries).

    Consecutive calls find the module's weights and its (fixed) input in cache, as a layer
    finds its input inside a model; calls drawn at random among hundreds of bricks find
    both evicted, which measured here put a 16 % overestimate on every construction
    (floor-corrected geomean 1.16 at H=1) and made the empty brick's floor 0.135 ms for
    0.078 ms called alone. Several passes keep what the random draw gave: drift on the
    machine reaches every module in several places of the run. The first call of a burst
    finds the cache cold; the median ignores it."""

    modules: tuple[int, ...]
    burst: int
    passes: int

    @classmethod
    def at_least(cls, modules: Sequence[int], queries: int) -> BurstSchedule:
        """At least ``queries`` calls of each module, in up to ``PASSES`` passes."""
        burst = -(-queries // max(1, min(PASSES, queries)))
        return cls(tuple(modules), burst, -(-queries // burst))

    def __len__(self) -> int:
        return len(self.modules) * self.burst * self.passes

    def module(self, query: int) -> int:
        """The module the ``query``-th measured query calls (cycling past the end)."""
        return self.modules[(query // self.burst) % len(self.modules)]


def time_modules(items: Sequence[Item], settings: MeasureSettings) -> list[Timing]:
    """Each module's latency from LoadGen SingleStream runs over all of them at once, in
    ``BurstSchedule``'s order: a run's set-up (tens of ms) is paid once, not once per
    brick. LoadGen's queries pace the calls; which sample it drew does not matter.

    A module that got fewer than half of ``min_queries`` (LoadGen ended early) is measured
    again in a run of the few that did (at most ``MAX_ROUNDS`` runs). Each Timing reports
    its own query count; its ``seconds`` is the runs' time shared out by the module's
    share of the measured latency."""
    if not items:
        return []
    if settings.threads:
        torch.set_num_threads(settings.threads)
    backend = ModulesBackend(items)
    for index in range(len(items)):  # warm every module, not only the one LoadGen warms
        backend.predict(np.full((WARM_UP_CALLS, 1), index, np.float32))
    latencies: list[list[float]] = [[] for _ in items]
    needed = max(1, settings.min_queries // 2)
    wanted = list(range(len(items)))
    seconds = 0.0
    for _ in range(MAX_ROUNDS):
        round_ms, round_seconds = _one_run(backend, wanted, settings)
        seconds += round_seconds
        for index, latency in round_ms:
            latencies[index].append(latency)
        wanted = [i for i in range(len(items)) if len(latencies[i]) < needed]
        if not wanted:
            break
    if wanted:
        raise BackendError(
            f"measurement: modules {wanted[:5]} got fewer than {needed} queries in "
            f"{MAX_ROUNDS} runs; raise --queries"
        )
    total_ms = sum(sum(own) for own in latencies)
    return [
        Timing(
            median_ms=float(np.median(own)),
            mean_ms=float(np.mean(own)),
            p90_ms=float(np.percentile(own, 90)),
            queries=len(own),
            seconds=seconds * sum(own) / total_ms if total_ms else 0.0,
        )
        for own in latencies
    ]


def _one_run(
    backend: ModulesBackend, indices: list[int], settings: MeasureSettings
) -> tuple[list[tuple[int, float]], float]:
    """One SingleStream run over the modules ``indices``: (module, latency ms) per query."""
    backend.measuring = False
    backend.order = []
    backend.schedule = BurstSchedule.at_least(indices, settings.min_queries)
    qsl = TensorQSL.from_array(np.asarray(indices, dtype=np.float32).reshape(-1, 1))
    config = ScenarioConfig(
        scenario="single-stream",
        min_duration_s=settings.min_duration_s,
        min_query_count=len(backend.schedule),
    )
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="benchstack-bricks-") as log_dir:
        result = run_loadgen(backend, qsl, config, batch_size=1, log_dir=Path(log_dir))
    seconds = time.perf_counter() - start
    stats = result.stats
    if stats.failed_samples:
        raise BackendError(f"a module failed during measurement: {stats.errors[:1]}")
    if len(backend.order) != len(stats.latencies_ns):
        raise BackendError(
            f"measurement: {len(backend.order)} calls noted for {len(stats.latencies_ns)} latencies"
        )
    pairs = [(i, ns / 1e6) for i, ns in zip(backend.order, stats.latencies_ns, strict=True)]
    return pairs, seconds
