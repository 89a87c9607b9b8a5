"""Answers shared by every caller, kept a moment: reads that many clients poll (the live
agents) are computed once per ``ttl_s`` per API process instead of once per request."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

Value = TypeVar("Value")


class ShortCache(Generic[Value]):
    """``get(key, compute)``: the value computed for ``key`` within the last ``ttl_s``
    seconds, else ``compute()``'s (two callers that miss at once may both compute; the
    later answer is kept). ``ttl_s`` 0 computes every time. At most ``max_keys`` keys."""

    def __init__(
        self, ttl_s: float, *, max_keys: int = 64, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl_s = ttl_s
        self.max_keys = max_keys
        self.clock = clock
        self._values: dict[Hashable, tuple[float, Value]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], Value]) -> Value:
        if self.ttl_s <= 0:
            return compute()
        now = self.clock()
        with self._lock:
            kept = self._values.get(key)
        if kept is not None and now - kept[0] < self.ttl_s:
            return kept[1]
        value = compute()
        with self._lock:
            if len(self._values) >= self.max_keys and key not in self._values:
                self._values.clear()
            self._values[key] = (now, value)
        return value
