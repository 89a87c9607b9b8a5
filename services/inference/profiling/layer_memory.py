"""Memory per layer: what each layer allocates, from torch.profiler's memory events.

The LIBRARY pass profiles with ``profile_memory``: every allocation and free is an event
with its size and the allocator's running total (``torch_library`` keeps them as
``memory`` spans on the thread that made them). Each belongs to the innermost layer call
around it (as operators do, ``layer_ops._innermost``), so a layer's figures are its own,
not its submodules':

- ``allocated_bytes``: bytes it allocates per iteration (median over iterations);
- ``allocations``: how many allocations that is (median);
- ``peak_rise_bytes``: the most the allocator's total rose above its value when the call
  began, while the call ran (submodules included: it is the call's footprint), the largest
  call of an iteration, median over iterations.

The CPU allocator's total counts what torch allocates through it (tensors), not what
oneDNN or a BLAS library take for their own scratch space.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from services.inference.profiling.layer_ops import _innermost
from services.inference.profiling.passes import Profile
from services.inference.profiling.spans import Span


def memory_per_layer(profile: Profile, label: str = "LIBRARY") -> dict[str, dict[str, Any]]:
    """Layer name -> its memory figures (module docstring); {} without memory events."""
    spans = [s for s in profile.spans if s.args.get("pass") == label]
    events = sorted((s for s in spans if s.category == "memory"), key=lambda s: s.start_ns)
    if not events:
        return {}
    layers = [s for s in spans if s.category == "library-layer"]
    iterations = sorted({int(s.args["iteration"]) for s in spans if "iteration" in s.args})
    allocated: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    count: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for event in events:
        size = int(event.args.get("bytes", 0))
        layer = _innermost(layers, event) if size > 0 else None
        if layer is not None:
            iteration = int(event.args["iteration"])
            allocated[layer.name][iteration] += size
            count[layer.name][iteration] += 1
    rises = _peak_rises(layers, events)
    figures = {}
    for name in set(allocated) | set(rises):
        figures[name] = {
            "allocated_bytes": _median(allocated.get(name, {}), iterations),
            "allocations": _median(count.get(name, {}), iterations),
            "peak_rise_bytes": _median(rises.get(name, {}), iterations),
        }
    return figures


def _peak_rises(layers: list[Span], events: list[Span]) -> dict[str, dict[int, int]]:
    """Layer name -> iteration -> the largest rise of the allocated total in one call."""
    starts = np.array([e.start_ns for e in events])
    totals = [int(e.args.get("total_allocated", 0)) for e in events]
    before = [t - int(e.args.get("bytes", 0)) for e, t in zip(events, totals, strict=True)]
    rises: dict[str, dict[int, int]] = defaultdict(dict)
    for layer in layers:
        first = int(np.searchsorted(starts, layer.start_ns, side="left"))
        last = int(np.searchsorted(starts, layer.end_ns, side="right"))
        inside = [i for i in range(first, last) if events[i].thread == layer.thread]
        if not inside:
            continue
        baseline = before[inside[0]]
        rise = max(0, max(totals[i] for i in inside) - baseline)
        iteration = int(layer.args.get("iteration", -1))
        rises[layer.name][iteration] = max(rises[layer.name].get(iteration, 0), rise)
    return rises


def _median(by_iteration: dict[int, int], iterations: list[int]) -> float:
    return float(np.median([by_iteration.get(i, 0) for i in iterations])) if iterations else 0.0
