"""Modules with submodules that do work of their own get rows: a transformer's attention
(``nn.MultiheadAttention`` reads ``out_proj``'s weight, never calls it) was missing from the
layer table and coverage, which counted leaves only."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import torch

from services.inference.backend_interface import BackendOptions
from services.inference.profiling.analysis import layer_table, own_work_spans, summarise
from services.inference.profiling.passes import Profile, profile_backend
from services.inference.profiling.spans import Span


class TinyEncoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Linear(16, 256)
        self.block = torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True)
        self.head = torch.nn.Linear(256, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.block(self.embed(x)).mean(dim=1))


@dataclass
class EagerBackend:
    """What the torch instruments read of a backend: the eager module, its options."""

    model: torch.nn.Module = field(default_factory=lambda: TinyEncoder().eval())
    name: str = "torch"
    mode: str = "eager"
    options: BackendOptions = field(default_factory=BackendOptions)

    def predict(self, batch: np.ndarray) -> Any:
        with torch.inference_mode():
            return self.model(torch.from_numpy(batch))


def test_attention_gets_a_row_and_coverage_counts_it() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    batch = np.random.default_rng(0).standard_normal((8, 64, 16)).astype(np.float32)
    profile = profile_backend(EagerBackend(), batch, "FRAMEWORK", 5)  # type: ignore[arg-type]
    summary = summarise(profile)
    rows = {row["name"]: row for row in summary["layers"]}
    attention = rows["block.self_attn"]
    assert attention["own"] is True and attention["type"] == "MultiheadAttention"
    assert "block.self_attn.out_proj" not in rows  # never called as a module
    assert not rows["head"]["own"]
    print(f"tiny encoder coverage {summary['coverage']['ratio']:.1%}")
    assert summary["coverage"]["ratio"] >= 0.9


def _span(name: str, category: str, start: int, duration: int) -> Span:
    return Span(name, category, start, duration, args={"pass": "FRAMEWORK", "iteration": 0})


def test_own_time_is_the_call_less_its_direct_submodules_inside_it() -> None:
    spans = [
        _span("forward", "model", 0, 1_000_000),
        _span("block", "module", 0, 1_000_000),
        _span("block.inner", "module", 100_000, 500_000),
        _span("block.inner.leaf", "layer", 150_000, 300_000),
        _span("block.other", "layer", 700_000, 100_000),
    ]
    own = {s.name: s.duration_ns for s in own_work_spans(Profile("FRAMEWORK", 1, spans=spans))}
    assert own == {"block": 400_000, "block.inner": 200_000}
    rows = {r["name"]: r for r in layer_table(Profile("FRAMEWORK", 1, spans=spans))}
    assert rows["block"]["own"] and rows["block"]["median_ms"] == pytest.approx(0.4)
    assert sum(r["median_ms"] for r in rows.values()) == pytest.approx(1.0)
