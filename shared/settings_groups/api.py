"""How an API process serves: its workers, caches, reads and tokens."""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings


class ApiSettings(BaseSettings):
    """The API process fields of ``Settings`` (its bounds on requests are ``RequestLimits``)."""

    # /readyz's whole answer (database, broker, object store) is kept this long: probes in
    # a loop are answered from memory and cost other clients nothing.
    readiness_cache_seconds: float = Field(default=1.0, ge=0, le=60)
    # Each of /readyz's checks (database, broker, object store), run side by side, answers
    # within this or is reported timed out: /readyz answers within about this, whatever hangs.
    readiness_check_timeout_seconds: float = Field(default=2.0, gt=0, le=30)
    # API server processes; 0 starts one per usable CPU (the GraphQL layer is CPU-bound
    # and holds the GIL, so one process cannot use a second core).
    api_workers: int = Field(default=0, ge=0)
    # One log line per HTTP request from uvicorn. Off by default: /metrics already counts
    # requests by route and status, and the line cost about 6 % of an API process's CPU
    # under benchmarks/api_load.py.
    api_access_log: bool = False
    # Allocations between collections of the youngest generation in an API process
    # (Python's default is 700; services/stack/entry.py settle_garbage_collector says why).
    api_gc_threshold: int = Field(default=20_000, ge=100, le=1_000_000)
    # GraphQL requests in progress at once per API process; the rest wait their turn
    # (services/api/admission.py says why). 0: no limit.
    api_max_requests_in_progress: int = Field(default=8, ge=0, le=10_000)
    # Reads that every caller sees alike (the live agents) are kept this long per API
    # process: a client may see an agent's heartbeat up to this much late. 0: not kept.
    api_shared_reads_cache_seconds: float = Field(default=1.0, ge=0, le=60)
    # How long an API process trusts a token it has looked up before asking the database
    # again; a revoked token stops working within this many seconds. 0 asks every time.
    api_token_cache_seconds: float = Field(default=5.0, ge=0)
    # Reads of the API run on its event loop through asyncpg (shared/db/loop_reads.py says
    # why) when the database is Postgres; false: every read in a worker thread (psycopg2).
    api_reads_on_loop: bool = True
    # The API's reads on the loop: connecting, waiting for a pooled connection and each
    # statement end within this many seconds (then "database unavailable", 503).
    api_database_timeout_seconds: float = Field(default=10.0, gt=0, le=300)
    # How long a new API token lives unless `token create --expires-in` says otherwise,
    # and the longest lifetime anyone may ask for: no token lives for ever.
    token_lifetime_days: float = Field(default=90.0, gt=0)
    max_token_lifetime_days: float = Field(default=365.0, gt=0)

    @model_validator(mode="after")
    def _token_lifetime_within_limit(self) -> Self:
        if self.token_lifetime_days > self.max_token_lifetime_days:
            raise ValueError(
                f"token_lifetime_days: {self.token_lifetime_days:g} is longer than "
                f"max_token_lifetime_days ({self.max_token_lifetime_days:g}); lower it or "
                "raise BENCHSTACK_MAX_TOKEN_LIFETIME_DAYS"
            )
        return self
