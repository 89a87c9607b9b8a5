"""Many modules in one LoadGen run: each latency goes to the module that ran it."""

from __future__ import annotations

import time

import torch
from torch import nn

from services.workloads.bricks.measure import MeasureSettings, time_modules


class Sleeper(nn.Module):
    """A module of known latency."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(self.seconds)
        return x


def test_latencies_are_attributed_to_the_module_that_ran() -> None:
    x = (torch.zeros(1),)
    items = [(Sleeper(0.004), x), (Sleeper(0.0), x), (Sleeper(0.002), x)]
    slow, fast, middle = time_modules(items, MeasureSettings(20, 0.01, threads=1))
    assert slow.median_ms > middle.median_ms > fast.median_ms
    assert 4.0 <= slow.median_ms < 12.0 and 2.0 <= middle.median_ms < 10.0
    assert all(t.queries >= 10 for t in (slow, fast, middle))
    # The run's time is shared out by measured latency: the slow module took the most.
    assert slow.seconds > middle.seconds > fast.seconds


def test_a_brick_is_called_without_the_exported_input_check_and_computes_the_same() -> None:
    import torch

    from services.workloads.bricks.measure import unguarded

    layer = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()).eval()
    example = torch.randn(1, 3, 8, 8)
    exported = torch.export.export(layer, (example,))
    guarded, fast = exported.module(), unguarded(exported.module())
    names = [getattr(h, "__name__", "") for h in fast._forward_pre_hooks.values()]
    assert "_check_input_constraints_pre_hook" not in names
    # The hook was there to remove, and the rest of the module's call is unchanged.
    assert "_check_input_constraints_pre_hook" in [
        getattr(h, "__name__", "") for h in guarded._forward_pre_hooks.values()
    ]
    # Nor does its graph call the guards function or flatten its inputs through pytree.
    assert "_guards_fn" in guarded.code and "tree_flatten_spec" in guarded.code
    assert "_guards_fn" not in fast.code and "tree_flatten_spec" not in fast.code
    with torch.inference_mode():
        (output,) = fast(example)  # plain codegen: the graph's outputs as a tuple
        assert torch.equal(output, guarded(example))


def test_each_module_is_called_in_bursts_over_several_passes() -> None:
    from services.workloads.bricks.measure import BurstSchedule

    schedule = BurstSchedule.at_least([4, 7], queries=6)
    calls = [schedule.module(k) for k in range(len(schedule))]
    assert calls == [4, 4, 7, 7] * 3  # bursts of 2 (6 over up to 5 passes), 3 passes
    many = BurstSchedule.at_least(range(200), queries=50)
    assert (many.burst, many.passes, len(many)) == (10, 5, 200 * 50)
    assert [many.module(k) for k in (0, 9, 10, 1999, 2000)] == [0, 0, 1, 199, 0]


def test_every_thread_that_calls_the_bricks_runs_them_in_inference_mode() -> None:
    """LoadGen calls from a new thread each run; a later thread may reuse an ended one's
    id and must still enter inference mode itself."""
    import threading

    import numpy as np

    from services.workloads.bricks.measure import ModulesBackend

    seen: list[bool] = []

    class Probe(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            seen.append(torch.is_inference_mode_enabled())
            return x

    backend = ModulesBackend([(Probe(), (torch.zeros(1),))])
    for _ in range(3):
        thread = threading.Thread(target=backend.predict, args=(np.zeros((1, 1), np.float32),))
        thread.start()
        thread.join()
    assert seen == [True, True, True]
