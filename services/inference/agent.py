"""Agent registration: an inference worker announces what it can run, then heartbeats.

One agent row per (worker process, queue). The scheduler routes only to agents whose
heartbeat is recent, so a crashed worker stops receiving new evaluations within a few
heartbeats, and a cleanly stopped one at once.

An agent advertises what routing constraints match on: framework versions, device, CPU
(model, architecture, cores), memory, GPUs through NVML, and its settings (intra-op
threads). Besides its framework's shared queue it consumes its host's queue and its own
direct queue, so the scheduler can reach exactly the workers that satisfy a request.
"""

from __future__ import annotations

import logging
import os
import platform
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from services.inference.backends import registry
from shared import queues, runtime
from shared.db import evaluation_repo
from shared.devices import parse_device
from shared.environment import capture_environment
from shared.heartbeat import Heartbeat
from shared.queues import direct_queue, host_queue

log = logging.getLogger(__name__)


@dataclass
class Agent:
    frameworks: list[str]
    device: str = "cpu"
    # Applied to every backend this worker loads (BackendOptions.intra_op_threads);
    # 0: chosen per run for its scenario and the free CPUs (inference/threads.py).
    threads: int = 0
    # The machine's price per hour (BENCHSTACK_AGENT_PRICE_PER_HOUR); None: not declared.
    price_per_hour: float | None = None
    # The machine advice files its runs under (BENCHSTACK_AGENT_MACHINE); "": host/queue.
    machine: str = ""
    # The OpenAI-compatible endpoint it serves (BENCHSTACK_AGENT_ENDPOINT_URL, _MODEL);
    # "": none. Generative runs on it measure this endpoint when they name none.
    endpoint_url: str = ""
    endpoint_model: str = ""
    hostname: str = field(default_factory=platform.node)
    heartbeat_s: float = 10.0
    _heartbeat: Heartbeat = field(init=False)

    def __post_init__(self) -> None:
        self._heartbeat = Heartbeat(self._beat, self.heartbeat_s, "agent-heartbeat", "agent")
        device = parse_device(self.device)  # a DeviceError names the field and what is accepted
        if self.threads < 0:
            raise ValueError(f"threads: must be 0 (chosen per run) or more, got {self.threads}")
        if self.price_per_hour is not None and not 0 < self.price_per_hour <= 1_000_000:
            raise ValueError(
                f"price_per_hour: {self.price_per_hour:g} must be a price above 0 and at most "
                "1000000 per hour"
            )
        offered = registry.available_backends(device.kind)
        unknown = [f for f in self.frameworks if f not in offered]
        if unknown:
            raise ValueError(
                f"frameworks: {', '.join(unknown)} not installed here or not for device "
                f"{self.device}; accepted: {', '.join(offered)}"
            )

    def queue_for(self, framework: str) -> str:
        return queues.inference_queue(framework, self.device)

    def direct_queue_for(self, framework: str) -> str:
        return direct_queue(self.queue_for(framework), self.hostname, os.getpid())

    def queues(self) -> list[str]:
        """Each framework's shared queue, this host's queue and this process's own."""
        names: list[str] = []
        for framework in self.frameworks:
            queue = self.queue_for(framework)
            names += [queue, host_queue(queue, self.hostname), self.direct_queue_for(framework)]
        return names

    @property
    def settings(self) -> dict[str, Any]:
        """Recorded with the agent and with every run it measures."""
        settings: dict[str, Any] = {"intra_op_threads": self.threads}
        if self.price_per_hour is not None:
            settings["price_per_hour"] = self.price_per_hour
        if self.machine:
            settings["machine"] = self.machine
        if self.endpoint_url:
            settings["endpoint_url"] = self.endpoint_url
        if self.endpoint_model:
            settings["endpoint_model"] = self.endpoint_model
        return settings

    def agent_id(self, framework: str) -> str:
        return f"{self.hostname}/{self.queue_for(framework)}/{os.getpid()}"

    @property
    def agent_ids(self) -> list[str]:
        return [self.agent_id(f) for f in self.frameworks]

    def describe(self) -> tuple[dict[str, Any], dict[str, Any]]:
        env = capture_environment(all_packages=False)
        hardware = {k: env[k] for k in ("cpu", "memory_bytes", "gpus")}
        software = {k: env[k] for k in ("benchstack", "os", "python", "frameworks")}
        return hardware, software

    def register(self) -> None:
        hardware, software = self.describe()
        with runtime.db() as session:
            for framework in self.frameworks:
                evaluation_repo.upsert_agent(
                    session,
                    agent_id=self.agent_id(framework),
                    hostname=self.hostname,
                    queue=self.queue_for(framework),
                    framework=framework,
                    framework_version=registry.installed_version(framework) or "unknown",
                    device=self.device,
                    hardware=hardware,
                    software=software,
                    settings=self.settings,
                    direct_queue=self.direct_queue_for(framework),
                )
        log.info("registered agents %s", ", ".join(self.agent_ids))

    def _beat(self, session: Session) -> None:
        evaluation_repo.heartbeat(session, self.agent_ids)

    def start(self) -> None:
        self.register()
        self._heartbeat.start()

    def stop(self) -> None:
        self._heartbeat.stop(
            lambda session: evaluation_repo.mark_agents_stopped(session, self.agent_ids),
            what="agents",
        )
