"""The measurement child of a LoadGen run: open the shards, hold the host, load the model
(or find it kept loaded), run the scenario, upload the logs and the judged measurement."""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from services.core.manifest import ModelManifest, parse_manifest
from services.core.scenario import ScenarioConfig
from services.core.workload import AgentRun
from services.inference import model_cache
from services.inference.backend_interface import Backend, BackendOptions
from services.inference.backends.registry import load_backend
from services.inference.measurement import PhaseClock, measurement_of, store_attempt
from services.inference.measurement_child import announce_started
from services.inference.profiling.run_profile import RunProfiler, batch_of
from services.inference.run import RunOutcome, execute_run
from services.inference.runtime_info import framework_runtime
from services.inference.threads import with_scenario_threads
from services.preprocess.shards import ShardSet
from services.workloads.agent_run import backend_options, host_slot
from shared.environment import capture_environment
from shared.settings import Settings

log = logging.getLogger(__name__)


def worker_models(settings: Settings) -> model_cache.ModelCache:
    """The models this process keeps between runs (the worker's resident child's)."""
    return model_cache.process_cache(settings.model_cache_bytes)


def log_model_use(model_name: str, use: model_cache.ModelUse) -> None:
    if use.cold:
        log.info("model %s loaded in %.2f s (cold start)", model_name, use.load_s)
    else:
        log.info(
            "model %s kept loaded from an earlier run (%d before; its load took %.2f s)",
            model_name,
            use.runs_before,
            use.load_s,
        )


def measure(run: AgentRun) -> dict[str, str]:
    """Load, run (holding the host), upload under the run's prefix; returns the keys.

    The stack's measurement child and the embedded launcher both run this; the launcher's
    differences are ``run.hooks`` (progress, SUT workers, class names, its profiler, its
    Ctrl-C exit), none of which changes a figure."""
    message, settings, store = run.message, run.resources.settings, run.resources.store
    manifest = parse_manifest(message.manifest)
    scenario = ScenarioConfig.model_validate(message.scenario)
    hooks = run.hooks
    profiler: RunProfiler = hooks.profiler or RunProfiler(message.trace_level)
    with profiler.step("shards"):
        shards = ShardSet.open(store, message.shard_keys, manifest.inputs[0])
    slot = host_slot(settings)
    with tempfile.TemporaryDirectory(prefix="benchstack-run-") as tmp:
        # The host first: loading a model while another run measures would disturb it,
        # and threads are chosen for the load the machine has once it is ours.
        with slot.measuring(message.run_id) as host:
            announce_started()
            hooks.on_stage("loading model")
            # Threads left at 0 are chosen for the scenario: a framework's default pool on
            # a shared machine inflates latency (a SingleStream p50 of 496 ms, not 41 ms).
            options, threads = with_scenario_threads(
                backend_options(message, run.agent_settings, settings),
                scenario.scenario,
                workers=hooks.workers,
            )
            clock = PhaseClock()
            # Ctrl-C while measuring (embedded) leaves no run files and no host claim.
            cleanups = (
                lambda: shutil.rmtree(tmp, ignore_errors=True),
                lambda: (slot.active / f"{message.run_id}.json").unlink(missing_ok=True),
            )
            outcome = _load_and_run(
                run, manifest, scenario, shards, options, profiler, clock, Path(tmp), cleanups
            )
        measurement = measurement_of(
            outcome,
            agent=_agent_record(run.agent_id, run.agent_settings, options),
            # What the loaded frameworks say of CUDA and cuDNN, recorded by both modes.
            environment=capture_environment() | {"framework_runtime": framework_runtime()},
            host=host.to_dict() | {"threads": threads.reason},
            input_errors=shards.errors,
            profile=profiler.summary(),
            timings=clock.timings,
        )
        # No span names the trace here: the stack names its evaluation's trace when it
        # adopts the file (profiling/stack_trace.adopt_trace); the embedded mode has none.
        trace_files = profiler.write(Path(tmp), run_id=message.run_id, trace_id="")
        return store_attempt(store, run.prefix, outcome.log_files | trace_files, measurement)


def _load_and_run(
    run: AgentRun,
    manifest: ModelManifest,
    scenario: ScenarioConfig,
    shards: ShardSet,
    options: BackendOptions,
    profiler: RunProfiler,
    clock: PhaseClock,
    log_dir: Path,
    cleanups: tuple[Callable[[], None], ...],
) -> RunOutcome:
    """Load the model (or find it kept loaded), run LoadGen, then any profiling passes; on
    the host slot the caller holds."""
    message, hooks = run.message, run.hooks
    # A traced run measures the cold start itself (profiler.cold), so it loads afresh.
    models = (
        model_cache.ModelCache(0) if profiler.enabled else worker_models(run.resources.settings)
    )

    def load() -> Backend:
        with profiler.step("model load"), clock.phase("model_load"):
            return load_backend(message.framework, options, manifest)

    # A sweep in one process, or a worker's resident child, loads its model once: it stays
    # loaded between runs, and a failed run closes it (sessions, device memory).
    key = model_cache.model_key(message.framework, options, manifest)
    with models.use(key, load, options) as model:
        log_model_use(manifest.name, model)
        if not model.cold:
            hooks.on_stage("model kept loaded from the previous run")
        backend = model.backend
        batch = None
        if profiler.enabled:
            count = min(message.batch_size, shards.sample_count)
            batch = batch_of(shards.fetch(range(count)), message.batch_size)
            profiler.cold(backend, batch)
        hooks.on_stage("running")
        hooks.on_run_start(scenario.effective_min_duration_s)
        # The embedded mode's Ctrl-C must not unwind through LoadGen (interrupt.py); the
        # run's files are stored only after this returns, so none exist yet.
        with (
            hooks.interruptible(*cleanups),
            profiler.step("loadgen run", headline=True),
            clock.phase("loadgen"),
        ):
            outcome: RunOutcome = execute_run(
                manifest=manifest,
                backend=backend,
                scenario=scenario,
                batch_size=message.batch_size,
                log_dir=log_dir,
                fetch=shards.fetch,
                sample_count=shards.sample_count,
                labels=shards.labels,
                workers=hooks.workers,
                class_names=hooks.class_names,
                progress=hooks.on_loadgen,
            )
        if batch is not None:
            hooks.on_stage(f"profiling ({profiler.level})")
            profiler.passes(backend, batch)
    clock.timings.update(model.timings())
    return outcome


def _agent_record(
    agent_id: str, agent_settings: dict[str, Any], options: BackendOptions
) -> dict[str, Any]:
    """The agent as the measurement records it, with the options the run applied."""
    return {
        "id": agent_id,
        "settings": dict(agent_settings),
        "backend_options": {
            "intra_op_threads": options.intra_op_threads,
            "inter_op_threads": options.inter_op_threads,
            "extra": options.extra,
        },
    }
