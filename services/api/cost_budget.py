"""A budget of query cost per caller: each caller (a user, or an address without a token)
may spend ``rate`` cost units a second with bursts up to ``burst`` (a token bucket), so one
client looping on expensive queries cannot take the API from everyone else. Costs are
the estimates of ``query_cost.operation_cost``, so a cheap query costs little and a page
of reports a lot. The buckets live in one API process; callers are forgotten least
recently used first past ``max_callers``, so the table stays bounded under a flood of
addresses.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

RATE_LIMITED = "RATE_LIMITED"


class CostBudget:
    def __init__(
        self,
        *,
        rate: float,
        burst: float,
        max_callers: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rate = rate
        self.burst = burst
        self.max_callers = max_callers
        self.clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # level, at
        self._lock = threading.Lock()

    def take(self, caller: str, cost: float) -> float:
        """Spend ``cost`` from ``caller``'s bucket: 0.0 when it may run now, else the
        seconds until the bucket holds enough (nothing is spent then). A cost above the
        burst is charged as the burst: the per-operation limit is the cost limit's job."""
        cost = min(cost, self.burst)
        now = self.clock()
        with self._lock:
            level, at = self._buckets.pop(caller, (self.burst, now))
            level = min(self.burst, level + (now - at) * self.rate)
            if level >= cost:
                level -= cost
                wait = 0.0
            else:
                wait = (cost - level) / self.rate
            self._buckets[caller] = (level, now)
            while len(self._buckets) > self.max_callers:
                self._buckets.popitem(last=False)
        return wait
