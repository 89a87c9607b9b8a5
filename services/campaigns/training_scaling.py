"""Training scaling in one machine: the campaign of services/core/campaigns/training_scaling.py
with each gang's N ranks as N local processes (the stack's ``submitTrainingScaling`` puts
them on N agents). A rank runs the training workload's own ``measure`` on the message the
scheduler would send it (core/dispatch.inference_message), meets the others at the
rendezvous in the local object store (workloads/training/gang.py), and is stored by the
workload's ``read`` and ``save`` with its group record, as the aggregator stores it.
"""

from __future__ import annotations

import multiprocessing
import uuid
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from services.core.campaigns import training_scaling as scaling
from services.core.campaigns.group import Done
from services.core.catalogue import resolve_model
from services.core.dispatch import inference_message
from services.core.manifest import ModelManifest
from services.core.messages import RunCompleted, RunInference
from services.core.request import RunRequest
from services.core.run_report import attempt_prefix
from services.core.scenario import ScenarioConfig
from services.core.workload import AgentRun, entry
from services.embedded.request import checked
from services.workloads import workload_named
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from shared.runtime import resources_for
from shared.settings import Settings

WORKLOAD = "training"


def run_training_scaling(
    request: RunRequest,
    world_sizes: list[int],
    settings: Settings,
    *,
    field: str = "--world-sizes",
) -> tuple[list[dict[str, Any]], list[scaling.PointFigures]]:
    """Every world size's gang in turn, as the campaign's ``next_step`` asks; returns each
    rank's stored report (in the order stored) and the points. ``request``: what every
    rank trains, as the stack's ``submitTrainingScaling`` takes it: a catalogue model built
    from a torch architecture, the training workload named with its options, the per-rank
    batch size (weak scaling) and the device."""
    first = scaling.plan(world_sizes, request.stored(), field=field)
    checked(request, settings)
    _options(request)  # refused here, before a process starts
    _check_gpus(request.device or "cpu", max(world_sizes), field)
    if not request.model:
        raise ValueError("model: give a catalogue model built from a torch architecture")
    manifest = resolve_model(request.model)
    finished: list[dict[str, Any]] = []
    step = scaling.next_step(first, finished)
    while not isinstance(step, Done):
        if not step:
            raise RuntimeError("training scaling: a step started nothing and gave no points")
        for gang in step:
            finished.extend(_run_gang(gang, request, manifest, settings))
        step = scaling.next_step(first, finished)
    return finished, step.summary


def _check_gpus(device: str, ranks: int, field: str) -> None:
    """One GPU per local rank: NCCL refuses two ranks on one GPU (the stack gives each
    rank an agent of its own)."""
    if not device.startswith("cuda"):
        return
    import torch

    found = torch.cuda.device_count()
    if ranks > found:
        raise ValueError(f"{field}: {ranks} ranks need {ranks} GPUs; this machine has {found}")


def _options(request: RunRequest) -> dict[str, Any]:
    """The training options as the workload checks and stores them; ValueError when the
    request names another workload."""
    if request.workload != WORKLOAD:
        raise ValueError(f"workload: scaling trains; {request.workload!r} is not accepted")
    model = workload_named(WORKLOAD).options
    assert model is not None  # training takes options
    given = request.workloads[0][1] if request.workloads else {}
    options: dict[str, Any] = model.model_validate(given).model_dump(mode="json")
    return options


def _run_gang(
    gang: scaling.Gang, request: RunRequest, manifest: ModelManifest, settings: Settings
) -> list[dict[str, Any]]:
    """The gang's ranks together, one spawned process each (a forked child would inherit
    this process's torch thread pools mid-state); their stored reports in rank order."""
    size = gang.world_size
    evaluations = [
        _evaluation(request, manifest, gang.placed(rank, local_rank=rank, host_ranks=size))
        for rank in range(size)
    ]
    messages = [inference_message(e, []) for e in evaluations]
    prefixes = [attempt_prefix(m.run_id, 1) for m in messages]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=size, mp_context=context) as pool:
        running = [
            pool.submit(measure_rank, m.model_dump(mode="json"), prefix, settings)
            for m, prefix in zip(messages, prefixes, strict=True)
        ]
        keys = [future.result() for future in running]
    return [
        _store(e, m, prefix, found, settings)
        for e, m, prefix, found in zip(evaluations, messages, prefixes, keys, strict=True)
    ]


def measure_rank(payload: dict[str, Any], prefix: str, settings: Settings) -> dict[str, str]:
    """One rank, in its own process: the workload's measurement, stored under ``prefix``."""
    message = RunInference.model_validate(payload)
    run = AgentRun(message, "", prefix, {}, resources_for(settings))
    keys: dict[str, str] = entry(workload_named(message.workload).measure)(run)
    return keys


def _store(
    evaluation: Evaluation,
    message: RunInference,
    prefix: str,
    keys: dict[str, str],
    settings: Settings,
) -> dict[str, Any]:
    """The rank's run read and stored as the aggregator's task does; its stored report."""
    workload = workload_named(WORKLOAD)
    resources = resources_for(settings)
    completed = RunCompleted(
        evaluation_id="", run_id=message.run_id, agent_id="", log_prefix=prefix, log_keys=keys
    )
    outcome = entry(workload.read)(evaluation, completed, resources.store)
    with resources.db() as session:
        entry(workload.save)(session, evaluation, completed, outcome)
    return load_stored(settings, message.run_id)


def load_stored(settings: Settings, run_id: str) -> dict[str, Any]:
    with resources_for(settings).db() as session:
        run = session.get(Run, run_id)
        assert run is not None, run_id
        return dict(run.report)


def _evaluation(request: RunRequest, manifest: ModelManifest, rank: scaling.Rank) -> Evaluation:
    """The rank's evaluation as the API would store it (never stored here: its run names
    no evaluation), its group record as a stack rank's."""
    record = rank.stored()
    return Evaluation(
        id="",
        run_id=str(uuid.uuid4()),
        model_name=manifest.name,
        model_version=manifest.version,
        manifest=manifest.to_dict(),
        framework=manifest.framework.name,
        device=request.device or "cpu",
        scenario=ScenarioConfig().model_dump(mode="json"),
        batch_size=request.batch_size,
        dataset="synthetic",
        dataset_count=None,
        seed=0,
        trace_level="NONE",
        constraints={},
        backend_options={},
        threads=None,
        workload=WORKLOAD,
        workload_options=_options(request),
        group_id=record.pop("id"),
        group_info=record,
    )
