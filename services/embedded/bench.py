"""The embedded pipeline: preprocess -> inference -> aggregate in one process.

It calls the same pure functions the distributed services call, against the embedded
default (an SQLite file, a local folder as object store) or whatever the settings name.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from services.aggregator.repository import record_from_report, save_run
from services.core.scenario import ScenarioConfig
from services.embedded.interrupt import exit_on_interrupt, storing_is_atomic
from services.inference.backends.base import Backend, BackendOptions
from services.inference.backends.registry import load_backend
from services.inference.host_slot import HostSlot
from services.inference.loadgen.progress import ProgressCallback
from services.inference.measurement import PhaseClock, measurement_of, store_attempt
from services.inference.model_cache import ModelCache, model_key, process_cache
from services.inference.profiling.passes import DEFAULT_ITERATIONS
from services.inference.profiling.run_profile import RunProfiler, batch_of
from services.inference.run import RunOutcome, execute_run
from services.inference.runtime_info import framework_runtime
from services.inference.threads import with_scenario_threads
from services.preprocess import shards
from services.preprocess.batch import finish
from services.preprocess.datasets import Dataset, resolve_dataset
from services.preprocess.device_decode import DECODER_NAME, decode_device, decoder_label
from services.preprocess.pipeline import Prepared, preprocess
from services.preprocess.shard_keys import files_digest, shard_key
from shared.catalogue import resolve_model
from shared.db.session import session_scope
from shared.environment import capture_environment
from shared.host_load import usable_cpus
from shared.manifest import ModelManifest
from shared.manifest_checks import check_manifest
from shared.manifest_sections import Fidelity
from shared.run_report import BackendSettings, RunSettings, assemble_report, attempt_prefix
from shared.settings import Settings
from shared.storage import ObjectStore, make_store


@dataclass(frozen=True)
class BenchRequest:
    model: str
    framework: str | None = None
    scenario: ScenarioConfig = field(default_factory=ScenarioConfig)
    batch_size: int = 1
    dataset: str = "synthetic"
    samples: int | None = 64
    seed: int = 0
    backend_options: BackendOptions = field(default_factory=BackendOptions)
    workers: int = 1
    # Optional: a fixed run id (to link runs before they exist), the manifest itself
    # (a rerun uses the stored one, not today's catalogue), and the group this run
    # belongs to, e.g. {"kind": "sweep", "id": ..., "parameter": "batch_size", "value": 8}.
    run_id: str | None = None
    manifest: ModelManifest | None = None
    group: dict[str, Any] | None = None
    # The agent constraint terms of the stack run this one reproduces ({"require": [...]}).
    constraints: dict[str, Any] = field(default_factory=dict)
    # Above NONE, leveled profiling passes follow the (uninstrumented) LoadGen run.
    trace_level: str = "NONE"
    profile_iterations: int = DEFAULT_ITERATIONS
    # Input.fidelity for every input, over the manifest's own; None: the manifest's.
    preprocessing: Fidelity | None = None


@dataclass
class Progress:
    """Hooks a front end (the CLI's progress bars) can follow; all optional."""

    on_stage: Callable[[str], None] = lambda stage: None
    on_preprocess_start: Callable[[int], None] = lambda total: None
    on_preprocess_advance: Callable[[int], None] = lambda n: None
    on_run_start: Callable[[float], None] = lambda expected_s: None
    # Each LoadGen phase (warming up, calibrating, measuring), from a thread of its own;
    # None: no one watches and no polling thread runs.
    on_loadgen: ProgressCallback | None = None


def load_or_preprocess(
    store: ObjectStore,
    dataset: Dataset,
    manifest: ModelManifest,
    progress: Progress,
    device: str = "cpu",
) -> tuple[Prepared, bool, str]:
    """Prepared tensors for the dataset, from the content-addressed cache when present.

    The shard is the stack's (services/preprocess/shards.py): tensors, then the JSON
    sidecar that marks it complete, so either mode reuses what the other prepared.
    ``device``: the run's; on a CUDA one the fast mode decodes there (nvJPEG), into a
    shard of its own."""
    spec = manifest.inputs[0]
    samples = dataset.samples
    decoding_device = decode_device(spec, device)
    key = shard_key(
        [s.id for s in samples],
        spec,
        files_digest(samples),
        decoder=DECODER_NAME if decoding_device else "",
    )
    if shards.is_complete(store, key):
        meta = shards.read_meta(store, key)
        tensors = finish(shards.decode_tensors(store.get_bytes(key)), spec)
        decoder = decoder_label(decoding_device)
        reused = Prepared(tensors=tensors, ids=meta["ids"], labels=meta["labels"], decoder=decoder)
        return reused, True, key
    progress.on_preprocess_start(len(samples))
    prepared = preprocess(
        samples,
        spec,
        progress=progress.on_preprocess_advance,
        processes=usable_cpus(),
        stored=True,
        device=device,
    )
    if not prepared.errors:
        # Only complete shards are cached: a partial one would hide the failing files.
        shards.write_shard(store, key, prepared)
    prepared.tensors = finish(prepared.tensors, spec)
    return prepared, False, key


def run_bench(
    request: BenchRequest, settings: Settings, progress: Progress | None = None
) -> dict[str, Any]:
    """Benchmark one model; returns the stored report (also written to the database)."""
    progress = progress or Progress()
    run_id = request.run_id or str(uuid.uuid4())
    manifest = request.manifest or resolve_model(request.model)
    if request.preprocessing is not None:
        manifest = manifest.with_fidelity(request.preprocessing)
    framework = request.framework or manifest.framework.name
    # What `manifest validate` checks, refused the same way before anything loads.
    check_manifest(manifest, hash_files=False)
    store = make_store(settings)
    profiler = RunProfiler(request.trace_level, request.profile_iterations)
    data = _prepare_data(request, manifest, settings, store, profiler, progress)

    prefix = attempt_prefix(run_id, 1)
    slot = HostSlot.of(settings)
    with tempfile.TemporaryDirectory(prefix="benchstack-run-") as tmp:
        # The host first: loading a model while another run measures would disturb it,
        # and threads are chosen for the load the machine has once it is ours.
        with slot.measuring(run_id) as host:
            progress.on_stage("loading model")
            # Threads left at 0 are chosen for the scenario: a framework's default pool on
            # a shared machine inflates latency (a SingleStream p50 of 496 ms, not 41 ms).
            options, threads = with_scenario_threads(
                request.backend_options, request.scenario.scenario, workers=request.workers
            )
            request = replace(request, backend_options=options)
            clock = PhaseClock()
            outcome = _load_and_measure(
                request,
                framework,
                manifest,
                data,
                settings=settings,
                profiler=profiler,
                clock=clock,
                progress=progress,
                log_dir=Path(tmp),
                # Ctrl-C while measuring leaves no run files and no host-slot claim behind.
                cleanups=(
                    lambda: shutil.rmtree(tmp, ignore_errors=True),
                    lambda: (slot.active / f"{run_id}.json").unlink(missing_ok=True),
                ),
            )
        # To the row's commit a Ctrl-C waits: stored whole or not at all (interrupt.py).
        with storing_is_atomic(run_id):
            # The machine's declared price, as an agent records its settings with each run.
            price = settings.agent_price_per_hour
            measurement = measurement_of(
                outcome,
                agent={"settings": {"price_per_hour": price}} if price is not None else None,
                environment=capture_environment() | {"framework_runtime": framework_runtime()},
                host=host.to_dict() | {"threads": threads.reason},
                input_errors=[str(e) for e in data.prepared.errors],
                profile=profiler.summary(),
                timings=clock.timings,
            )
            # No OpenTelemetry span runs in the embedded mode: the trace names none (the
            # stack names its evaluation's trace in profiling/stack_trace.adopt_trace).
            trace_files = profiler.write(Path(tmp), run_id=run_id, trace_id="")
            keys = store_attempt(store, prefix, outcome.log_files | trace_files, measurement)
            progress.on_stage("storing")
            report = assemble_report(
                run_id=run_id,
                model={"name": manifest.name, "version": manifest.version},
                settings=run_settings(request, manifest, framework),
                measurement=measurement,
                dataset=data.dataset_section(),
                preprocessing=data.preprocessing_section(manifest),
                logs=keys,
                log_locations={name: store.describe(key) for name, key in keys.items()},
                log_prefix=prefix,
                group=request.group,
            )
            with session_scope(settings.effective_database_url) as session:
                save_run(session, record_from_report(report, manifest.to_dict()))
    # What is printed is what is stored: strict JSON, a figure LoadGen lacks is null.
    return report.to_dict()


@dataclass(frozen=True)
class _PreparedData:
    """The dataset of a run and its preprocessed tensors, with how they were had."""

    dataset: Dataset
    prepared: Prepared
    reused: bool
    shard: str
    seconds: float

    def dataset_section(self) -> dict[str, Any]:
        return {
            "name": self.dataset.name,
            "samples": len(self.prepared.tensors),
            "failed": [str(e) for e in self.prepared.errors],
        }

    def preprocessing_section(self, manifest: ModelManifest) -> dict[str, Any]:
        return {
            "fidelity": manifest.inputs[0].fidelity,
            "decoder": self.prepared.decoder,
            "seconds": self.seconds,
            "reused": self.reused,
            "shard": self.shard,
            # How the seconds were spent: samples and processes (none when reused).
            "samples": len(self.dataset.samples),
            "processes": None if self.reused else self.prepared.processes,
        }


def _prepare_data(
    request: BenchRequest,
    manifest: ModelManifest,
    settings: Settings,
    store: ObjectStore,
    profiler: RunProfiler,
    progress: Progress,
) -> _PreparedData:
    progress.on_stage("preparing data")
    with profiler.step("dataset"):
        dataset = resolve_dataset(
            request.dataset, count=request.samples, seed=request.seed, cache_dir=settings.data_dir
        )
    prep_start = time.perf_counter()
    with profiler.step("preprocess"):
        prepared, reused, shard = load_or_preprocess(
            store, dataset, manifest, progress, device=request.backend_options.device
        )
    return _PreparedData(dataset, prepared, reused, shard, time.perf_counter() - prep_start)


def _load_and_measure(
    request: BenchRequest,
    framework: str,
    manifest: ModelManifest,
    data: _PreparedData,
    *,
    settings: Settings,
    profiler: RunProfiler,
    clock: PhaseClock,
    progress: Progress,
    log_dir: Path,
    cleanups: tuple[Callable[[], None], ...],
) -> RunOutcome:
    """Load (or reuse) the model, run LoadGen, then any profiling passes; on the host slot
    the caller holds."""
    options = request.backend_options
    # A traced run measures the cold start itself (profiler.cold): it loads afresh.
    budget = 0 if profiler.enabled else settings.model_cache_bytes
    models = ModelCache(0) if budget == 0 else process_cache(budget)

    def load() -> Backend:
        with profiler.step("model load"), clock.phase("model_load"):
            return load_backend(framework, options, manifest)

    # A sweep or find-peak in this process loads its model once: it stays loaded
    # between runs, and a failed run closes it (sessions, device memory).
    key = model_key(framework, options, manifest)
    with models.use(key, load, options) as model:
        if not model.cold:
            progress.on_stage("model kept loaded from the previous run")
        backend = model.backend
        tensors = data.prepared.tensors
        batch = batch_of(tensors, request.batch_size) if profiler.enabled else None
        if batch is not None:
            profiler.cold(backend, batch)
        progress.on_stage("running")
        progress.on_run_start(request.scenario.effective_min_duration_s)
        # Ctrl-C here must not unwind through LoadGen (see interrupt.py); the run's
        # files and row are written only after this returns, so none exist yet.
        with (
            exit_on_interrupt(*cleanups),
            profiler.step("loadgen run", headline=True),
            clock.phase("loadgen"),
        ):
            outcome = execute_run(
                manifest=manifest,
                backend=backend,
                scenario=request.scenario,
                batch_size=request.batch_size,
                log_dir=log_dir,
                tensors=tensors,
                labels=data.prepared.labels,
                workers=request.workers,
                class_names=data.dataset.class_names,
                progress=progress.on_loadgen,
            )
        if batch is not None:
            progress.on_stage(f"profiling ({profiler.level})")
            profiler.passes(backend, batch)
    clock.timings.update(model.timings())
    return outcome


def run_settings(request: BenchRequest, manifest: ModelManifest, framework: str) -> RunSettings:
    """What the user asked for, and where the manifest's relative paths resolve."""
    options = request.backend_options
    return RunSettings(
        model=request.model,
        framework=framework,
        scenario=request.scenario.model_dump(mode="json"),
        batch_size=request.batch_size,
        dataset=request.dataset,
        samples=request.samples,
        seed=request.seed,
        workers=request.workers,
        manifest_dir=manifest.base_dir,
        backend_options=BackendSettings(
            device=options.device,
            intra_op_threads=options.intra_op_threads,
            inter_op_threads=options.inter_op_threads,
            extra=dict(options.extra),
        ),
        constraints=dict(request.constraints),
        trace_level=request.trace_level,
    )
