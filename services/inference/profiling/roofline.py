"""The roofline: where each layer stands against what this machine can do.

A layer's arithmetic intensity is its floating-point operations over the bytes it moves;
its attainable rate is min(peak FLOP/s, intensity x peak bytes/s). Below the ridge point
(peak FLOP/s / peak bytes/s) a layer is bound by memory, above it by compute, and the
fraction of that roof it reaches says how much room is left.

- **Work per layer** (``layer_work``): one uncounted forward of the profiled batch under
  ``torch.utils.flop_counter.FlopCounterMode`` gives each module's FLOPs (matrix products
  and convolutions: 2 per multiply-add). Layers it counts nothing for (activations,
  normalisation, pooling) are given one operation per output element, marked
  ``flops_source: "per output element"``: an estimate, so they can be placed at all.
  Bytes are the least a layer must move: its inputs, its outputs and its own parameters
  and buffers, each once (caches can only make it less; re-reads only more). A module's
  own-work row gets its FLOPs less its submodules' and the same kind of bytes.
- **Peaks** (``measure_peaks``): a square float32 matrix product (GEMM) and a large copy
  on the model's device with the run's threads, each repeated. A peak is what the machine
  reaches when nothing gets in its way, so the roof is the 90th percentile of the repeats
  (not the single best: one lucky repeat does not set it); the median and the
  interquartile range are kept beside it. Measured, never looked up. The copy is larger
  than any cache, so the memory roof is main memory's: a layer whose tensors stay in cache
  can sit above it (a cache-level roof would need hardware counters).
- **Placement** (``roofline``): achieved FLOP/s and bytes/s from each layer's median time
  in the FRAMEWORK pass. That time includes the profiler's hooks, so small layers sit
  lower than they run unprofiled.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from services.inference.backend_interface import Backend
from services.inference.profiling.torch_layers import bytes_of, elements_of

GEMM_SIZE = 1024
COPY_BYTES = 64 * 2**20
PROBE_REPEATS = 15
PEAK_PERCENTILE = 90
PER_OUTPUT_ELEMENT = "per output element"
COUNTED = "counted"
# Peaks are a property of the machine, the device and the thread count: measured once per
# process for each (device, threads).
_PEAKS: dict[tuple[str, int], dict[str, Any]] = {}


def model_device(model: object) -> torch.device:
    """Where ``model``'s parameters live (the CPU for anything else)."""
    first = next(model.parameters(), None) if isinstance(model, torch.nn.Module) else None
    return first.device if first is not None else torch.device("cpu")


def layer_work(backend: Backend, batch: np.ndarray) -> dict[str, dict[str, Any]]:
    """{module name: {flops, bytes, flops_source}} for one forward of ``batch`` through
    the backend's eager torch model (module names as ``named_modules`` gives them)."""
    model: torch.nn.Module = backend.model  # type: ignore[attr-defined]
    names = {module: name for name, module in model.named_modules()}
    moved: dict[str, int] = {}
    outputs: dict[str, int] = {}

    def after(module: torch.nn.Module, inputs: Any, output: Any) -> None:
        name = names.get(module)
        if name is None or name == "":
            return
        own = sum(
            t.element_size() * t.nelement()
            for t in [*module.parameters(recurse=False), *module.buffers(recurse=False)]
        )
        moved[name] = moved.get(name, 0) + bytes_of(inputs) + bytes_of(output) + own
        outputs[name] = outputs.get(name, 0) + elements_of(output)

    handles = [module.register_forward_hook(after) for module in names if names[module]]
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            backend.predict(batch)
    finally:
        for handle in handles:
            handle.remove()
    root = type(model).__name__
    counted = {
        _strip_root(key, root): int(sum(ops.values()))
        for key, ops in counter.get_flop_counts().items()
        if key != "Global"
    }
    work: dict[str, dict[str, Any]] = {}
    for name in moved:
        flops = counted.get(name, 0)
        children = [
            counted.get(child, 0)
            for child in counted
            if child.startswith(name + ".") and "." not in child[len(name) + 1 :]
        ]
        own_flops = flops - sum(children)
        work[name] = {
            "flops": flops if flops > 0 else outputs[name],
            "own_flops": own_flops if own_flops > 0 else outputs[name],
            "bytes": moved[name],
            "flops_source": COUNTED if flops > 0 else PER_OUTPUT_ELEMENT,
            "own_flops_source": COUNTED if own_flops > 0 else PER_OUTPUT_ELEMENT,
        }
    return work


def _strip_root(key: str, root: str) -> str:
    return key[len(root) + 1 :] if key.startswith(root + ".") else ("" if key == root else key)


def measure_peaks(device: torch.device) -> dict[str, Any]:
    """This machine's float32 GEMM rate and copy bandwidth on ``device`` with the current
    thread count (kept for the process: see ``_PEAKS``)."""
    key = (str(device), torch.get_num_threads())
    if key not in _PEAKS:
        _PEAKS[key] = _probe(device)
    return _PEAKS[key]


def _probe(device: torch.device) -> dict[str, Any]:
    sync: Callable[[], None] = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    a = torch.randn(GEMM_SIZE, GEMM_SIZE, device=device)
    b = torch.randn(GEMM_SIZE, GEMM_SIZE, device=device)
    source = torch.empty(COPY_BYTES // 4, device=device)
    target = torch.empty_like(source)
    with torch.no_grad():
        gemm_s = _timed(lambda: torch.mm(a, b), sync)
        copy_s = _timed(lambda: target.copy_(source), sync)
    gemm_flops = 2 * GEMM_SIZE**3
    copy_bytes = 2 * COPY_BYTES  # read once, written once
    gflops = [gemm_flops / s / 1e9 for s in gemm_s]
    gbps = [copy_bytes / s / 1e9 for s in copy_s]
    return {
        "device": str(device),
        "threads": torch.get_num_threads(),
        "gflops": float(np.percentile(gflops, PEAK_PERCENTILE)),
        "gflops_median": float(np.median(gflops)),
        "gflops_iqr": _iqr(gflops),
        "gbps": float(np.percentile(gbps, PEAK_PERCENTILE)),
        "gbps_median": float(np.median(gbps)),
        "gbps_iqr": _iqr(gbps),
        "repeats": PROBE_REPEATS,
        "method": (
            f"float32 GEMM {GEMM_SIZE}x{GEMM_SIZE} (2n^3 FLOPs) and a {COPY_BYTES // 2**20} MiB "
            f"copy (read + write), {PROBE_REPEATS} repeats each after one warm-up; the roof is "
            f"the {PEAK_PERCENTILE}th percentile of the repeats"
        ),
    }


def _timed(work: Callable[[], object], sync: Callable[[], None]) -> list[float]:
    work()
    sync()
    seconds = []
    for _ in range(PROBE_REPEATS):
        began = time.perf_counter()
        work()
        sync()
        seconds.append(max(time.perf_counter() - began, 1e-9))
    return seconds


def _iqr(values: Sequence[float]) -> float:
    low, high = np.percentile(values, [25, 75])
    return float(high - low)


def roofline(
    rows: Sequence[Mapping[str, Any]],
    work: Mapping[str, Mapping[str, Any]],
    peaks: Mapping[str, Any],
) -> dict[str, Any]:
    """Each layer row of the FRAMEWORK table placed against ``peaks``; layers without
    measured work or time are listed in ``unplaced``."""
    ridge = peaks["gflops"] / peaks["gbps"] if peaks["gbps"] > 0 else None
    placed, unplaced = [], []
    for row in rows:
        found = work.get(row["name"])
        seconds = row["median_ms"] / 1e3
        if found is None or seconds <= 0 or not found["bytes"]:
            unplaced.append(row["name"])
            continue
        own = bool(row.get("own"))
        flops = found["own_flops"] if own else found["flops"]
        intensity = flops / found["bytes"]
        roof = min(peaks["gflops"], intensity * peaks["gbps"])
        achieved = flops / seconds / 1e9
        placed.append(
            {
                "name": row["name"],
                "type": row.get("type", ""),
                "own": own,
                "flops": flops,
                "flops_source": found["own_flops_source"] if own else found["flops_source"],
                "bytes": found["bytes"],
                "intensity": intensity,
                "median_ms": row["median_ms"],
                "gflops": achieved,
                "gbps": found["bytes"] / seconds / 1e9,
                "roof_gflops": roof,
                "of_roof": achieved / roof if roof > 0 else None,
                "bound": "memory" if ridge is not None and intensity < ridge else "compute",
            }
        )
    return {
        "peaks": dict(peaks),
        "ridge_flops_per_byte": ridge,
        "layers": placed,
        "unplaced": unplaced,
        "method": (
            "FLOPs from torch's FlopCounterMode (one per output element where it counts "
            "none), bytes = inputs + outputs + own parameters once, time = the layer's "
            "median in the FRAMEWORK pass (hooks included)"
        ),
    }
