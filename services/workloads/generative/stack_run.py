"""A generative evaluation on an agent: the measurement child holds the host slot, runs
the measurement (run.py) and writes ``generative.json`` under the attempt's prefix."""

from __future__ import annotations

from typing import Any

from services.core.workload import AgentRun
from services.workloads.agent_run import measure_holding_host
from services.workloads.generative.options import GenerativeOptions
from services.workloads.generative.run import measure_generation
from shared.environment import capture_environment


def measure(run: AgentRun) -> dict[str, str]:
    return measure_holding_host(run, measure_generative)


def measure_generative(agent_run: AgentRun, threads: int) -> dict[str, Any]:
    options = GenerativeOptions.model_validate(agent_run.message.workload_options)
    document = measure_generation(options, threads=threads, on_stage=agent_run.hooks.on_stage)
    return document | {"environment": capture_environment()}
