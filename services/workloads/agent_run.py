"""What every workload's measurement child shares on an agent: the backend options a run
gets (the agent's settings, the evaluation's threads, the deployment's options such as
Triton's address), the host slot a measurement holds, and the harness of the workloads
that read no dataset (hold the host, measure, write ``<workload>.json`` under the
attempt's prefix)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.core.messages import RunInference
from services.core.workload import AgentRun
from services.inference.backend_interface import BackendOptions
from services.inference.backends import registry
from services.inference.host_slot import HostSlot
from services.inference.measurement import store_outcome
from services.inference.measurement_child import announce_started, announce_waiting
from shared.host_load import HostLoadSampler, usable_cpus
from shared.settings import Settings

# (run, threads) -> the outcome document of a workload without a dataset.
OutcomeMeasurement = Callable[[AgentRun, int], dict[str, Any]]


def backend_options(
    message: RunInference, agent_settings: dict[str, Any], settings: Settings
) -> BackendOptions:
    """The agent's settings apply to every run it measures, except the threads an
    evaluation asks for itself; an option the backend's spec takes from the deployment
    (``deployment_options``: triton's url, BENCHSTACK_TRITON_URL) is filled in from the
    settings when the submission sets none."""
    extra = dict(message.backend_options)
    spec = registry.specs().get(message.framework)
    for key, setting in spec.deployment_options.items() if spec is not None else ():
        value = getattr(settings, setting)
        if key not in extra and value:
            extra[key] = value
    return BackendOptions(
        device=message.device,
        intra_op_threads=message.threads or int(agent_settings.get("intra_op_threads", 0)),
        extra=extra,
    )


def host_slot(settings: Settings) -> HostSlot:
    """The host's slot; a wait for it is announced to the worker (announce_waiting)."""
    return HostSlot.of(settings, on_wait=announce_waiting)


def measure_holding_host(run: AgentRun, measurement: OutcomeMeasurement) -> dict[str, str]:
    """Hold the host, run ``measurement``, store its document as ``<workload>.json``."""
    # The threads are part of the system a figure belongs to (a brick's key; a training
    # run uses every CPU as `benchstack train` does): they come from the agent's settings
    # or the CPUs it may use, never from the momentary load a LoadGen run's thread choice
    # reads, so the same agent finds its own figures again.
    message, settings = run.message, run.resources.settings
    options = backend_options(message, run.agent_settings, settings)
    threads = options.intra_op_threads or usable_cpus()
    # The ranks of a data-parallel gang on one host must run together: they share it.
    shared = message.data_parallel is not None
    with host_slot(settings).measuring(message.run_id, shared=shared) as host:
        announce_started()
        # How busy other processes kept the host meanwhile: BUSY as `bench` says it (the
        # ranks of a gang sharing a host count as each other's load: they share it).
        with HostLoadSampler() as load:
            document = measurement(run, threads)
    busy = {"load": load.result.to_dict(), "busy": bool(load.result.busy)}
    document["host"] = host.to_dict() | busy | {"threads": threads}
    document["agent"] = {"id": run.agent_id, "settings": dict(run.agent_settings)}
    return store_outcome(run.resources.store, run.prefix, message.workload, document)
