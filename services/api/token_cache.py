"""Who a token belongs to, remembered for a few seconds in one API process.

Every GraphQL request starts with a token lookup; without this each request would open a
second database session just to learn its caller. Only tokens that were found are kept
(an unknown token never fills the cache), keyed by their digest (no clear token is held),
and each for ``ttl_s`` at most, so a revoked or expired token keeps working in a process
for no longer than that.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

# Far above the number of tokens in use at once; bounds memory if many clients come and go.
MAX_ENTRIES = 10_000


@dataclass(frozen=True)
class Caller:
    user_id: int
    user_name: str


class TokenCache:
    """Not thread-safe: the API reads and fills it on its event loop only."""

    def __init__(
        self,
        ttl_s: float,
        *,
        max_entries: int = MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, Caller]] = OrderedDict()

    @staticmethod
    def _key(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    def get(self, token: str) -> Caller | None:
        """The caller, while the entry is younger than ``ttl_s``; else None (look it up)."""
        key = self._key(token)
        entry = self._entries.get(key)
        if entry is None:
            return None
        stored_at, caller = entry
        if self._clock() - stored_at >= self.ttl_s:
            del self._entries[key]
            return None
        return caller

    def put(self, token: str, caller: Caller) -> None:
        if self.ttl_s <= 0:
            return
        key = self._key(token)
        self._entries[key] = (self._clock(), caller)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
