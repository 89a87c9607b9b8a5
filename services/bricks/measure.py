"""Time a brick (or a whole model) through the harness every benchmark uses: LoadGen in
SingleStream, the SUT calling a Backend, latencies read from the SUT's own clock.

A query is one call of the module on its recorded input shapes (batch included): the
QSL's samples only pace the queries, so the brick sees the same tensors on every call.
Bricks and the end-to-end model go through the same code, which is what makes a sum of
bricks comparable with the model's own latency.
"""

from __future__ import annotations

import platform
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from services.inference.backends.base import Backend, BackendError
from services.inference.loadgen.config import ScenarioConfig
from services.inference.loadgen.qsl import TensorQSL
from services.inference.loadgen.runner import run_loadgen

# Bounds on what a user may ask of one measurement.
MAX_QUERIES = 100_000
MAX_MIN_DURATION_S = 600.0
MAX_THREADS = 1024
WARM_UP_CALLS = 3
MAX_ROUNDS = 5


@dataclass(frozen=True)
class Timing:
    median_ms: float
    mean_ms: float
    p90_ms: float
    queries: int
    seconds: float  # wall time the measurement took, warm-up and LoadGen set-up included

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
FRAMEWORKS = ("torch", "onnx")


class ModulesBackend(Backend):
    """Torch modules (or other callables) with their fixed inputs, as one SUT backend: a
    sample's value says which module a query runs, and each measured call's module is
    noted in order.

    SingleStream at batch 1 on a synchronous backend runs one query at a time, so the k-th
    call noted after ``start_measurement`` is the k-th latency the SUT recorded."""

    name = "bricks"

    def __init__(self, items: Sequence[Item]) -> None:
        super().__init__()
        self.items = list(items)
        self.measuring = False
        self.order: list[int] = []

    def version(self) -> str:
        return str(torch.__version__)

    def load(self, manifest: Any) -> None:
        """Nothing to load: the modules are given."""

    def start_measurement(self) -> None:
        self.measuring = True

    def predict(self, batch: np.ndarray) -> np.ndarray:
        for value in batch[:, 0]:
            index = int(value)
            module, inputs = self.items[index]
            with torch.inference_mode():
                module(*inputs)
            if self.measuring:
                self.order.append(index)
        return np.zeros((len(batch), 1), np.float32)


class _Empty(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 0  # one trivial operator: an exported graph cannot be empty


def empty_brick() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """A brick that computes nothing worth timing, exported and loaded like every brick:
    its latency is the floor each brick's latency includes."""
    example = (torch.zeros(1),)
    return unguarded(torch.export.export(_Empty(), example).module()), example


def unguarded(module: nn.Module) -> nn.Module:
    """An exported program's module without its input-constraint check: the check
    re-validates every input's shape and type on every call (measured alone on this
    machine: a 3x3 conv on 8x8x8 took 70 us called guarded, 42 us unguarded, 23 us eager),
    and a model called eagerly pays nothing like it. Over a catalogue suite it is a small
    share of the time spent measuring (852 bricks at H=1: 11.4 -> 11.5 s, within noise).
    A brick is only ever called on the inputs recorded when it was cut, so the check can
    never fail here."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if getattr(hook, "__name__", "") == "_check_input_constraints_pre_hook":
            del module._forward_pre_hooks[key]
    return module


def system_key(threads: int, framework: str = "torch") -> str:
    """Which system a figure belongs to: host, framework and its version, device and
    threads. The framework is part of the key, so each framework's bricks keep their own
    results file and their own floor (an ONNX brick's floor is an empty onnxruntime call).
    onnxruntime's default thread count is not readable before a session exists: 0 threads
    is keyed as ``tdefault``."""
    if framework not in FRAMEWORKS:
        raise ValueError(f"framework: {framework!r}; accepted: {', '.join(FRAMEWORKS)}")
    if framework == "onnx":
        from services.bricks.measure_onnx import onnxruntime_version

        text = f"{platform.node()}-onnxruntime{onnxruntime_version()}-cpu-t{threads or 'default'}"
    else:
        used = threads or torch.get_num_threads()
        text = f"{platform.node()}-torch{torch.__version__}-cpu-t{used}"
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)


def time_module(
    module: Callable[..., Any], inputs: tuple[Any, ...], settings: MeasureSettings
) -> Timing:
    return time_modules([(module, inputs)], settings)[0]


def time_modules(items: Sequence[Item], settings: MeasureSettings) -> list[Timing]:
    """Each module's latency from LoadGen SingleStream runs over all of them at once:
    LoadGen picks a module per query at random, so drift on the machine reaches every
    module alike, and a run's set-up (tens of ms) is paid once, not once per brick.

    LoadGen's draw gives each module about ``min_queries`` queries; a module drawn fewer
    than half as often is measured again in a run of the few that were (at most
    ``MAX_ROUNDS`` runs). Each Timing reports its own query count; its ``seconds`` is the
    runs' time shared out by the module's share of the measured latency."""
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
    qsl = TensorQSL.from_array(np.asarray(indices, dtype=np.float32).reshape(-1, 1))
    config = ScenarioConfig(
        scenario="single-stream",
        min_duration_s=settings.min_duration_s,
        min_query_count=min(settings.min_queries * len(indices), MAX_QUERIES * 10),
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
