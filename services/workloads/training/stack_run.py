"""A training evaluation on an agent: `benchstack train`'s measurement (warm-up excluded,
images/s = batch / mean step time with its standard error and jitter, the raw step times,
data share, peak memory) run by the worker in a measurement child of its own, holding the
host slot and with the host's load sampled (``host.busy``), and written to
``training.json`` under the attempt's prefix for the aggregator to store."""

from __future__ import annotations

from typing import Any

from services.core.manifest import parse_manifest
from services.core.messages import RunInference
from services.core.workload import AgentRun
from services.workloads.agent_run import measure_holding_host
from services.workloads.torch_models import builds_torch_modules
from services.workloads.training.gang import train_in_gang
from services.workloads.training.options import TrainingOptions
from services.workloads.training.throughput import TrainingSettings, run
from shared.cpu_quota import cpu_limit
from shared.environment import capture_environment

# Architectures whose training name differs from the architecture's (data_sources reads
# the channel count from the name).
_TRAINING_NAMES = {"benchstack:digits_cnn": "digits"}


def training_settings(message: RunInference, threads: int) -> TrainingSettings:
    options = TrainingOptions.model_validate(message.workload_options)
    manifest = parse_manifest(message.manifest)
    architecture = manifest.source.architecture
    if not builds_torch_modules(manifest.framework.name) or architecture is None:
        raise ValueError(
            f"training: {manifest.name} is a {manifest.framework.name} model from "
            f"{architecture or 'a file'}; accepted: torch models built from an architecture"
        )
    return TrainingSettings(
        model=_TRAINING_NAMES.get(architecture, architecture),
        steps=options.steps,
        batch_size=message.batch_size,
        warmup=options.warmup,
        image_size=options.image_size,
        precision=options.precision,
        optimizer=options.optimizer,
        data="synthetic",
        # No more threads than the agent's CPU quota lets it keep busy (a pod's limit).
        threads=max(1, min(threads, cpu_limit())),
        device=message.device,
    )


def measure(run: AgentRun) -> dict[str, str]:
    """The measurement child's entry: training.json under the run's prefix, the host held."""
    return measure_holding_host(run, measure_training)


def measure_training(agent_run: AgentRun, threads: int) -> dict[str, Any]:
    """Train and time, alone or as one rank of a data-parallel gang (training/gang.py); the
    document ``training.json`` holds."""
    message = agent_run.message
    settings = training_settings(message, threads)
    if message.data_parallel is not None:
        resources = agent_run.resources
        figures = train_in_gang(
            settings,
            message.data_parallel,
            resources.store,
            store_endpoint=resources.settings.s3_endpoint,
        )
    else:
        figures = run(settings).as_dict()
    return {
        "kind": "training",
        "model": parse_manifest(message.manifest).name,
        "options": TrainingOptions.model_validate(message.workload_options).model_dump(mode="json"),
        **figures,
        "environment": capture_environment(),
    }
