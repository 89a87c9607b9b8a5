"""The measurement child of a LoadGen run: open the shards, hold the host, load the model
(or find it kept loaded), run the scenario, upload the logs and the judged measurement."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

from services.core.scenario import ScenarioConfig
from services.core.workload import AgentRun
from services.inference import model_cache
from services.inference.backends.base import Backend, BackendOptions
from services.inference.backends.registry import load_backend
from services.inference.measurement import PhaseClock, measurement_of, store_attempt
from services.inference.measurement_child import announce_started
from services.inference.profiling.run_profile import RunProfiler, batch_of
from services.inference.run import RunOutcome, execute_run
from services.inference.threads import with_scenario_threads
from services.preprocess.shards import ShardSet
from services.workloads.agent_run import backend_options, host_slot
from shared.manifest import parse_manifest
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
    """Load, run (holding the host), upload under the run's prefix; returns the keys."""
    message, settings, store = run.message, run.resources.settings, run.resources.store
    manifest = parse_manifest(message.manifest)
    scenario = ScenarioConfig.model_validate(message.scenario)
    profiler = RunProfiler(message.trace_level)
    with profiler.step("shards"):
        shards = ShardSet.open(store, message.shard_keys, manifest.inputs[0])
    with tempfile.TemporaryDirectory(prefix="benchstack-run-") as tmp:
        # The host first: loading a model while another run measures would disturb it,
        # and threads are chosen for the load the machine has once it is ours.
        with host_slot(settings).measuring(message.run_id) as host:
            announce_started()
            options, threads = with_scenario_threads(
                backend_options(message, run.agent_settings, settings), scenario.scenario
            )
            clock = PhaseClock()
            # A traced run measures the cold start itself (profiler.cold), so it loads afresh.
            models = model_cache.ModelCache(0) if profiler.enabled else worker_models(settings)

            def load() -> Backend:
                with profiler.step("model load"), clock.phase("model_load"):
                    return load_backend(message.framework, options, manifest)

            key = model_cache.model_key(message.framework, options, manifest)
            with models.use(key, load, options) as model:
                log_model_use(manifest.name, model)
                backend = model.backend
                batch = None
                if profiler.enabled:
                    count = min(message.batch_size, shards.sample_count)
                    batch = batch_of(shards.fetch(range(count)), message.batch_size)
                    profiler.cold(backend, batch)
                with profiler.step("loadgen run", headline=True), clock.phase("loadgen"):
                    outcome: RunOutcome = execute_run(
                        manifest=manifest,
                        backend=backend,
                        scenario=scenario,
                        batch_size=message.batch_size,
                        log_dir=Path(tmp),
                        fetch=shards.fetch,
                        sample_count=shards.sample_count,
                        labels=shards.labels,
                    )
                if batch is not None:
                    profiler.passes(backend, batch)
            clock.timings.update(model.timings())
        measurement = measurement_of(
            outcome,
            agent=_agent_record(run.agent_id, run.agent_settings, options),
            host=host.to_dict() | {"threads": threads.reason},
            input_errors=shards.errors,
            profile=profiler.summary(),
            timings=clock.timings,
        )
        trace_files = profiler.write(Path(tmp), run_id=message.run_id)
        return store_attempt(store, run.prefix, outcome.log_files | trace_files, measurement)


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
