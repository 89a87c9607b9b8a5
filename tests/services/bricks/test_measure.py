"""Many modules in one LoadGen run: each latency goes to the module that ran it."""

from __future__ import annotations

import time

import torch
from torch import nn

from services.bricks.measure import MeasureSettings, time_modules


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
