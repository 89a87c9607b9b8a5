"""A user's open evaluationUpdates subscriptions counted across every API process.

Each process used to count its own, so N processes let a user hold N times
``max_subscriptions_per_user``. The seats live in Redis (the broker), one sorted set per
user whose members are seat ids scored by when they expire: a process that holds a seat
renews it every ``SEAT_TTL_S / 3`` (``renew``), so the seats of a process that died free
themselves within ``SEAT_TTL_S`` instead of counting for ever. Every call has a timeout;
when Redis cannot answer in time, or the broker is not Redis, the process falls back to
its own count (what it did before), so a broker outage never refuses a subscription that
one process alone would have taken.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Callable, Iterable

import redis

from shared.settings import Settings

log = logging.getLogger(__name__)

# How long a seat outlives its process's last renewal.
SEAT_TTL_S = 30.0
# Every Redis call's connect and read timeout: a hung Redis costs a subscriber this long.
REDIS_TIMEOUT_S = 1.0


class SubscriptionSeats:
    """Seats of one deployment (its database URL picks the keys, so two deployments or two
    test databases on one Redis never count each other's)."""

    def __init__(
        self,
        settings: Settings,
        *,
        ttl_s: float = SEAT_TTL_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._ttl_s, self._clock = ttl_s, clock
        scope = hashlib.sha256(settings.effective_database_url.encode()).hexdigest()[:16]
        self._prefix = f"benchstack:subscription_seats:{scope}:"
        self._client: redis.Redis | None = None
        # After Redis failed to answer, it is not asked again for a while: each subscriber
        # would otherwise wait REDIS_TIMEOUT_S for the same answer.
        self._quiet_until = 0.0
        if settings.broker_url.startswith(("redis://", "rediss://")):
            self._client = redis.Redis.from_url(
                settings.broker_url,
                socket_timeout=REDIS_TIMEOUT_S,
                socket_connect_timeout=REDIS_TIMEOUT_S,
            )

    def take(self, owner: int, limit: int) -> str | bool | None:
        """A new seat's id when the user holds fewer than ``limit`` across processes;
        False when they hold ``limit`` already; None when Redis cannot say (count here)."""
        if self._client is None or time.monotonic() < self._quiet_until:
            return None
        key, seat, now = self._key(owner), uuid.uuid4().hex, self._clock()
        try:
            pipe = self._client.pipeline(transaction=True)
            pipe.zremrangebyscore(key, "-inf", now)
            pipe.zadd(key, {seat: now + self._ttl_s})
            pipe.zcard(key)
            pipe.expire(key, int(self._ttl_s) + 1)
            held = int(pipe.execute()[2])
            if held > limit:
                self._client.zrem(key, seat)
                return False
        except redis.RedisError as exc:
            log.warning("subscription seats: Redis did not answer (%s); counting here", exc)
            self._quiet_until = time.monotonic() + self._ttl_s
            return None
        return seat

    def give_back(self, owner: int, seat: str) -> None:
        if self._client is None:
            return
        try:
            self._client.zrem(self._key(owner), seat)
        except redis.RedisError:
            log.warning("subscription seats: could not give back a seat; it expires by itself")

    def renew(self, seats: Iterable[tuple[int, str]]) -> None:
        """Push the expiry of these (owner, seat) forward: they are still open."""
        if self._client is None:
            return
        expires = self._clock() + self._ttl_s
        try:
            pipe = self._client.pipeline(transaction=False)
            for owner, seat in seats:
                pipe.zadd(self._key(owner), {seat: expires}, xx=True)
                pipe.expire(self._key(owner), int(self._ttl_s) + 1)
            pipe.execute()
        except redis.RedisError:
            log.warning("subscription seats: could not renew; retried at the next poll")

    def _key(self, owner: int) -> str:
        return f"{self._prefix}{owner}"
