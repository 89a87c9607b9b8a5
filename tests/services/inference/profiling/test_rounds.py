"""The leveled passes run interleaved in rounds, in an order that alternates, so a burst of
load on a shared host falls on every level alike; each pass still counts every iteration
once, under numbers of its own."""

from __future__ import annotations

import numpy as np

from services.core.manifest import ModelManifest
from services.inference.backend_interface import BackendOptions
from services.inference.backends.registry import create_backend
from services.inference.profiling.passes import profile_backend, round_sizes


def test_iterations_split_into_at_most_five_even_rounds() -> None:
    assert round_sizes(10) == [2, 2, 2, 2, 2]
    assert round_sizes(12) == [3, 3, 2, 2, 2]
    assert round_sizes(3) == [1, 1, 1]
    assert round_sizes(1) == [1]


def test_passes_alternate_round_by_round(digits_manifest: ModelManifest) -> None:
    backend = create_backend("torch", BackendOptions(intra_op_threads=1))
    backend.load(digits_manifest)
    batch = np.zeros((1, *digits_manifest.inputs[0].shape), np.float32)
    profile = profile_backend(backend, batch, "FRAMEWORK", 4)
    backend.close()
    assert [p.level for p in profile.passes] == ["NONE", "MODEL", "FRAMEWORK"]
    assert all(len(p.latencies_ns) == 4 for p in profile.passes)
    # One "pass" span per round and level (NONE records none), in time order.
    rounds = sorted((s for s in profile.spans if s.category == "pass"), key=lambda s: s.start_ns)
    order = [s.args["level"] for s in rounds if not s.name.startswith("pass cold")]
    assert order == ["MODEL", "FRAMEWORK", "FRAMEWORK", "MODEL"] * 2  # four rounds of one
    forwards = [s for s in profile.spans if s.category == "model" and s.args["pass"] == "MODEL"]
    assert sorted(s.args["iteration"] for s in forwards) == list(range(4))
