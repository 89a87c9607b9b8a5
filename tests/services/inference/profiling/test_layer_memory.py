"""Memory per layer from torch.profiler's memory events: each allocation goes to the
innermost layer call around it; a call's peak rise counts its submodules too."""

from __future__ import annotations

import numpy as np
import torch

from services.inference.profiling.analysis import summarise
from services.inference.profiling.layer_memory import memory_per_layer
from services.inference.profiling.passes import Profile, profile_backend
from services.inference.profiling.spans import Span
from services.inference.profiling.trace_events import MEMORY_COUNTER, trace_document
from tests.services.inference.profiling.test_roofline import Eager


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(64, 256)
        self.act = torch.nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The add allocates in Block itself, outside its submodules.
        return self.act(self.up(x)) + 1.0


def test_a_library_profile_gives_each_layer_what_it_allocates() -> None:
    torch.set_num_threads(1)
    batch = np.ones((32, 64), np.float32)
    profile = profile_backend(Eager(torch.nn.Sequential(Block()).eval()), batch, "LIBRARY", 3)  # type: ignore[arg-type]
    summary = summarise(profile)
    assert summary["layer_memory_source"].startswith("LIBRARY pass")
    rows = {row["name"]: row for row in summary["layers"]}
    output_bytes = 32 * 256 * 4
    # Each writes a new 32x256 float tensor per iteration (at least; oneDNN may add more).
    assert rows["0.up"]["allocated_bytes"] >= output_bytes
    assert rows["0.act"]["allocated_bytes"] >= output_bytes
    assert rows["0.up"]["allocations"] >= 1
    # The counter track of the allocator's total is in the trace, not as spans.
    document = trace_document(profile)
    assert any(e["name"] == MEMORY_COUNTER and e["ph"] == "C" for e in document["traceEvents"])
    assert not any(e.get("cat") == "memory" for e in document["traceEvents"])


def _span(name: str, category: str, start: int, duration: int, **args: object) -> Span:
    return Span(name, category, start, duration, 1, {"pass": "LIBRARY", "iteration": 0, **args})


def test_allocations_go_to_the_innermost_call_and_peaks_count_submodules() -> None:
    profile = Profile("LIBRARY", 1)
    profile.spans = [
        _span("outer", "library-layer", 0, 100),
        _span("outer.inner", "library-layer", 10, 30),
        # outer allocates 100 B, inner 400 B and frees 300 B, outer frees its 100 B.
        _span("[memory]", "memory", 5, 0, bytes=100, total_allocated=1100),
        _span("[memory]", "memory", 15, 0, bytes=400, total_allocated=1500),
        _span("[memory]", "memory", 20, 0, bytes=-300, total_allocated=1200),
        _span("[memory]", "memory", 60, 0, bytes=-100, total_allocated=1100),
    ]
    figures = memory_per_layer(profile)
    assert figures["outer"]["allocated_bytes"] == 100
    assert figures["outer.inner"]["allocated_bytes"] == 400
    # outer began at 1000 (before its first allocation) and reached 1500 inside inner.
    assert figures["outer"]["peak_rise_bytes"] == 500
    assert figures["outer.inner"]["peak_rise_bytes"] == 400
