"""The embedded launcher: one run of the stack's own path in this process.

The request becomes the evaluation the API would store (never stored here) and the
RunInference message the scheduler sends (core/dispatch.inference_message); preprocess
fills the stack's shard; the LoadGen workload measures it (its ``measure``, as a
measurement child does) and its ``read`` and ``save`` store it, as the aggregator does.
The embedded default is an SQLite file and a local folder; whatever the settings name works.
"""

from __future__ import annotations

from typing import Any

from services.core.catalogue import resolve_model
from services.core.dispatch import inference_message
from services.core.manifest import ModelManifest
from services.core.manifest_checks import check_manifest
from services.core.manifest_sections import as_fidelity
from services.core.messages import RunCompleted
from services.core.request import RunRequest
from services.core.run_report import attempt_prefix
from services.core.workload import AgentRun, RunHooks, entry
from services.embedded.evaluation import evaluation_of
from services.embedded.interrupt import storing_is_atomic
from services.embedded.request import Local, Progress, checked
from services.inference.profiling.run_profile import RunProfiler
from services.preprocess.datasets import resolve_dataset
from services.preprocess.local_shard import LocalShard, prepare_shard
from services.workloads import workload_named
from services.workloads.loadgen.outcome import InProcess
from shared.db.evaluations import Evaluation
from shared.runtime import resources_for
from shared.settings import Settings


def run_bench(
    request: RunRequest,
    settings: Settings,
    progress: Progress | None = None,
    local: Local | None = None,
) -> dict[str, Any]:
    """Benchmark one model; returns the stored report (also written to the database).
    The request is checked as the stack checks a submission (ValueError naming the field)."""
    progress, local = progress or Progress(), local or Local()
    scenario = checked(request, settings)
    if local.manifest is None and not request.model:
        raise ValueError("model: give a catalogue name or a manifest file")
    manifest = local.manifest or resolve_model(str(request.model))
    if request.preprocessing is not None:
        manifest = manifest.with_fidelity(as_fidelity(request.preprocessing))
    # What `manifest validate` checks, refused the same way before anything loads.
    check_manifest(manifest, hash_files=False)
    resources = resources_for(settings)
    profiler = RunProfiler(request.trace_level, local.profile_iterations)
    progress.on_stage("preparing data")
    with profiler.step("dataset"):
        dataset = resolve_dataset(
            request.dataset, count=request.samples, seed=request.seed, cache_dir=settings.data_dir
        )
    with profiler.step("preprocess"):
        shard = prepare_shard(
            resources.store,
            dataset,
            manifest,
            request.device or "cpu",
            on_start=progress.on_preprocess_start,
            on_advance=progress.on_preprocess_advance,
        )
    evaluation = evaluation_of(request, scenario, manifest, shard)
    message = inference_message(evaluation, [shard.key])
    price = settings.agent_price_per_hour
    # Stored whole or not at all: Ctrl-C waits for the row's commit, except while LoadGen
    # runs, where the guard leaves with nothing stored (interrupt.py).
    with storing_is_atomic(message.run_id) as measuring:
        run = AgentRun(
            message,
            agent_id="",
            prefix=attempt_prefix(message.run_id, 1),
            # The machine's declared price, as an agent records its settings with each run.
            agent_settings={"price_per_hour": price} if price is not None else {},
            resources=resources,
            hooks=RunHooks(
                on_stage=progress.on_stage,
                on_run_start=progress.on_run_start,
                on_loadgen=progress.on_loadgen,
                interruptible=measuring,
                workers=local.workers,
                class_names=tuple(dataset.class_names),
                profiler=profiler,
            ),
        )
        # The measurement uploads the attempt's files (measurement.json last); then the
        # storing tail reads and stores the run.
        keys: dict[str, str] = entry(workload_named(message.workload).measure)(run)
        # The model as asked (a manifest file's path too): a rerun resolves it the same way.
        model = request.model or manifest.name
        in_process = _in_process(model, local, manifest, dataset.name, shard)
        return _store(run, evaluation, keys, in_process)


def _store(
    run: AgentRun, evaluation: Evaluation, keys: dict[str, str], in_process: InProcess
) -> dict[str, Any]:
    """The storing tail: the measured attempt (``keys``) read and stored by the workload's
    ``read`` and ``save``, as the aggregator's task does; returns the stored report."""
    workload = workload_named(run.message.workload)
    run.hooks.on_stage("storing")
    completed = RunCompleted(
        evaluation_id=run.message.evaluation_id,
        run_id=run.message.run_id,
        agent_id=run.agent_id,
        log_prefix=run.prefix,
        log_keys=keys,
    )
    record = entry(workload.read)(evaluation, completed, run.resources.store, in_process)
    with run.resources.db() as session:
        entry(workload.save)(session, evaluation, completed, record)
    # What is printed is what is stored: strict JSON, a figure LoadGen lacks is null.
    report: dict[str, Any] = record.report
    return report


def _in_process(
    model: str, local: Local, manifest: ModelManifest, dataset: str, shard: LocalShard
) -> InProcess:
    return InProcess(
        model=model,
        workers=local.workers,
        dataset=shard.dataset_section(dataset),
        preprocessing=shard.preprocessing_section(manifest.inputs[0].fidelity),
    )
