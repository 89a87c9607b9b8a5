"""The roofline: FLOPs and bytes per layer from one counted forward, peaks from probes,
each layer placed and its bound named; a FRAMEWORK profile of a torch model carries it
with every layer of its table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from services.inference.backend_interface import BackendOptions
from services.inference.profiling import roofline
from services.inference.profiling.analysis import summarise
from services.inference.profiling.passes import profile_backend
from tests.services.inference.profiling.test_own_work import TinyEncoder


@dataclass
class Eager:
    model: torch.nn.Module
    name: str = "torch"
    mode: str = "eager"
    options: BackendOptions = field(default_factory=BackendOptions)

    def predict(self, batch: np.ndarray) -> Any:
        with torch.inference_mode():
            return self.model(torch.from_numpy(batch))


def test_a_linear_layer_s_work_is_counted_and_an_activation_s_estimated() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU()).eval()
    batch = np.ones((4, 16), np.float32)
    work = roofline.layer_work(Eager(model), batch)  # type: ignore[arg-type]
    linear, relu = work["0"], work["1"]
    assert linear["flops"] == 2 * 4 * 16 * 32 and linear["flops_source"] == roofline.COUNTED
    assert linear["bytes"] == 4 * (4 * 16 + 4 * 32 + 16 * 32 + 32)
    assert relu["flops"] == 4 * 32 and relu["flops_source"] == roofline.PER_OUTPUT_ELEMENT
    assert relu["bytes"] == 4 * (4 * 32 * 2)


def test_layers_are_placed_under_the_roof_and_their_bound_named() -> None:
    peaks = {"gflops": 100.0, "gbps": 10.0, "device": "cpu", "threads": 1}
    rows = [
        {"name": "thin", "median_ms": 1.0},
        {"name": "dense", "median_ms": 1.0},
        {"name": "untimed", "median_ms": 0.0},
    ]
    work = {
        "thin": {"flops": 1e6, "bytes": 1e6, "flops_source": "counted"},
        "dense": {"flops": 5e7, "bytes": 1e6, "flops_source": "counted"},
        "untimed": {"flops": 1e6, "bytes": 1e6, "flops_source": "counted"},
    }
    for found in work.values():
        found |= {"own_flops": found["flops"], "own_flops_source": "counted"}
    placed = roofline.roofline(rows, work, peaks)
    assert placed["ridge_flops_per_byte"] == 10.0
    assert placed["unplaced"] == ["untimed"]
    thin, dense = placed["layers"]
    # 1 FLOP/B: under the memory roof, 1 x 10 GB/s = 10 GFLOP/s; it does 1 GFLOP/s.
    assert thin["bound"] == "memory" and thin["roof_gflops"] == 10.0
    assert thin["gflops"] == 1.0 and thin["of_roof"] == 0.1
    # 50 FLOP/B: under the flat roof of 100 GFLOP/s; it does 50.
    assert dense["bound"] == "compute" and dense["roof_gflops"] == 100.0
    assert dense["of_roof"] == 0.5


def test_peaks_are_measured_once_per_device_and_threads() -> None:
    first = roofline.measure_peaks(torch.device("cpu"))
    assert first["gflops"] > 0 and first["gbps"] > 0
    assert first["gflops_iqr"] >= 0 and first["threads"] == torch.get_num_threads()
    assert roofline.measure_peaks(torch.device("cpu")) is first


def test_a_framework_profile_places_every_layer_of_its_table() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    batch = np.random.default_rng(0).standard_normal((4, 32, 16)).astype(np.float32)
    profile = profile_backend(Eager(TinyEncoder().eval()), batch, "FRAMEWORK", 3)  # type: ignore[arg-type]
    summary = summarise(profile)
    placed = summary["roofline"]
    assert placed is not None and placed["unplaced"] == []
    assert {p["name"] for p in placed["layers"]} == {r["name"] for r in summary["layers"]}
    assert all(p["intensity"] > 0 and p["gflops"] > 0 for p in placed["layers"])


def test_a_profile_without_a_framework_pass_has_no_roofline() -> None:
    batch = np.ones((2, 8, 16), np.float32)
    profile = profile_backend(Eager(TinyEncoder().eval()), batch, "MODEL", 2)  # type: ignore[arg-type]
    assert summarise(profile)["roofline"] is None


class Uncountable(torch.nn.Module):
    """A model whose counted forward fails (as an exotic operator might)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled() is False and not torch.is_inference_mode_enabled():
            raise RuntimeError("no counting here")
        return self.linear(x)


def test_a_model_that_cannot_be_counted_loses_its_roofline_not_its_profile() -> None:
    batch = np.ones((2, 16), np.float32)
    backend = Eager(Uncountable().eval())
    backend.predict = lambda b: backend.model(torch.from_numpy(b))  # type: ignore[method-assign]
    summary = summarise(profile_backend(backend, batch, "FRAMEWORK", 2))  # type: ignore[arg-type]
    assert summary["roofline"] is None
    assert any(note.startswith("roofline: not drawn (RuntimeError") for note in summary["notes"])
    assert summary["layers"]
