"""A generative evaluation on an agent: the measurement child holds the host slot, runs
the measurement (run.py) and writes ``generative.json`` under the attempt's prefix.

An agent may serve an OpenAI-compatible endpoint (its settings' ``endpoint_url`` and
``endpoint_model``, from BENCHSTACK_AGENT_ENDPOINT_URL/_MODEL): an evaluation with the
openai engine that names no url (or no served model) measures that one. The endpoint the
run talked to, the version and configuration the server reported, are recorded in the
run's environment (``endpoint``) beside the host's."""

from __future__ import annotations

from typing import Any

from services.core.workload import AgentRun
from services.workloads.agent_run import measure_holding_host
from services.workloads.generative.options import GenerativeOptions
from services.workloads.generative.run import measure_generation
from shared.environment import capture_environment


def measure(run: AgentRun) -> dict[str, str]:
    return measure_holding_host(run, measure_generative)


def with_agent_endpoint(
    options: GenerativeOptions, agent_settings: dict[str, Any]
) -> GenerativeOptions:
    """The options, the agent's endpoint filled in where an openai run names none."""
    if options.engine != "openai":
        return options
    given: dict[str, Any] = {}
    if options.url is None and agent_settings.get("endpoint_url"):
        given["url"] = str(agent_settings["endpoint_url"])
    if options.served_model is None and agent_settings.get("endpoint_model"):
        given["served_model"] = str(agent_settings["endpoint_model"])
    return options.model_copy(update=given) if given else options


def endpoint_environment(document: dict[str, Any]) -> dict[str, Any] | None:
    """What the run recorded of the server it measured: its url, the served model and the
    version and configuration the server reported; None for an embedded engine."""
    engine = document.get("engine") or {}
    if not engine.get("url"):
        return None
    return {"url": engine["url"], "model": engine.get("model"), "reported": engine.get("server")}


def measure_generative(agent_run: AgentRun, threads: int) -> dict[str, Any]:
    asked = GenerativeOptions.model_validate(agent_run.message.workload_options)
    options = with_agent_endpoint(asked, agent_run.agent_settings)
    document = measure_generation(options, threads=threads, on_stage=agent_run.hooks.on_stage)
    environment = capture_environment()
    endpoint = endpoint_environment(document)
    if endpoint is not None:
        environment["endpoint"] = endpoint
    return document | {"environment": environment}
