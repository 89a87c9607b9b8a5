"""How a run is measured on a host, and how the agent that measures it presents itself."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings


class MeasurementSettings(BaseSettings):
    """The measurement and agent fields of ``Settings``."""

    agent_heartbeat_seconds: float = Field(default=10.0, gt=0)
    # An agent is live while its last heartbeat is younger than this many heartbeats.
    agent_live_heartbeats: float = Field(default=3.0, gt=1)
    # The longest one run may measure (the measurement is ended past it); the broker's
    # visibility timeout derives from it, so a long run is not redelivered for no reason.
    max_run_seconds: float = Field(default=3600.0, gt=0)
    # A measuring worker renews its run's claim every third of this; a claim not renewed for
    # this long is lapsed and the run is dispatched again (recovery in about a minute,
    # whatever MAX_RUN_SECONDS is).
    claim_lease_seconds: float = Field(default=30.0, gt=0)
    # The most resident memory one measurement (its child process and what it starts) may
    # hold; past it the run is ended and FAILED with that reason. 0 disables the check.
    max_run_memory_mb: int = Field(default=16384, ge=0)
    # Memory for models kept loaded between runs (services/inference/model_cache.py), so a
    # sweep loads its model once; 0 loads every run afresh. Never more than half of
    # max_run_memory_mb, since a measurement process holds its cached models too.
    model_cache_mb: int = Field(default=2048, ge=0, le=1_048_576)
    # One measurement per host at a time (agents and embedded runs alike); false lets
    # measurements share the machine, and each run then records what overlapped it.
    measure_exclusive: bool = True
    # Where measurements on this host meet: the lock file and the registry of active runs.
    # Every agent and bench on one machine must see the same folder.
    host_slot_dir: Path = Path("/tmp/benchstack-host")
    # Whether a measuring process keeps the memory it frees ("keep", the default) or lets
    # glibc hand it back ("release"), which costs a depthwise net a page fault per 4 KiB
    # of activations on every inference (shared/allocator.py). Recorded with every run.
    allocator: Literal["keep", "release"] = "keep"
    # What this machine costs per hour (any currency, the same for every machine compared):
    # recorded in the agent's settings and with every run it measures (embedded runs too),
    # so `benchstack advise` can price an inference. Unset: no cost is given.
    agent_price_per_hour: float | None = Field(default=None, gt=0, le=1_000_000)
    # The machine `advise` files this agent's runs and price under; empty: the host and
    # queue of its agent id. Set it where a host name changes at every restart (pods of a
    # Deployment) or to tell apart agents that share a host. Letters, digits, ".-_:/".
    agent_machine: str = Field(default="", max_length=200, pattern=r"^[A-Za-z0-9._:/-]*$")
    # The OpenAI-compatible endpoint this agent serves (vLLM, SGLang, ...): its base URL and
    # the model's name there. Recorded in the agent's settings; a generative evaluation
    # with the openai engine that names no url (or no served model) measures these.
    agent_endpoint_url: str = Field(default="", max_length=1000, pattern=r"^(https?://\S+)?$")
    agent_endpoint_model: str = Field(default="", max_length=1000)

    @property
    def model_cache_bytes(self) -> int:
        """The model cache's budget: model_cache_mb, at most half the run memory limit."""
        budget = self.model_cache_mb
        if self.max_run_memory_mb:
            budget = min(budget, self.max_run_memory_mb // 2)
        return budget * 2**20
