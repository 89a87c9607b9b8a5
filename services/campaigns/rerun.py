"""``benchstack rerun``: a stored run's request rebuilt here and run again as the rerun
campaign of services/core/campaigns/rerun.py (its record, noise band and verdicts), the
stack's ``submitRerun`` being the other launcher."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from services.aggregator.repository import get_run
from services.campaigns.drive import drive
from services.campaigns.local_constraints import unmet_terms
from services.core.campaigns import rerun
from services.core.manifest import parse_manifest
from services.core.request import RunRequest
from services.core.stored_report import LoadGenReport, load_loadgen_report
from services.embedded.bench import run_bench
from services.embedded.request import Local, Progress
from shared.db.session import session_scope
from shared.settings import Settings


def request_from_run(
    run_id: str,
    report: Mapping[str, Any] | LoadGenReport,
    manifest: dict[str, Any],
    datasets_dir: Path | None = None,
) -> tuple[RunRequest, Local]:
    """The same everything: stored manifest (relative paths resolve where they did),
    scenario settings, seeds, batch size, dataset, samples, workers, device, backend
    options, threads and, for a stack run, its agent constraints, which this machine must
    satisfy (ValueError naming the unmet terms otherwise). The stored manifest and the
    workers go beside the request (``Local``).

    A stack run's report names its dataset folder as the client did, relative to the
    datasets folder (shared/server_paths.py): it is read from ``datasets_dir``."""
    loaded = load_loadgen_report(report)
    settings = loaded.settings
    if settings is None:
        raise ValueError(f"settings: run {run_id} stored none; it cannot be rerun")
    dataset = settings.dataset
    stack_run = bool(loaded.evaluation_id)
    if stack_run and datasets_dir is not None and dataset != "synthetic":
        dataset = str(Path(datasets_dir).expanduser() / dataset)
    options = settings.backend_options
    unmet, _ = unmet_terms(
        settings.constraints,
        framework=settings.framework,
        device=options.device,
        threads=options.intra_op_threads,
    )
    if unmet:
        raise ValueError(
            f"constraints: run {run_id} required agents this machine is not: " + "; ".join(unmet)
        )
    scenario = {k: v for k, v in settings.scenario.items() if v is not None}
    request = RunRequest(
        model=settings.model or manifest["name"],
        framework=settings.framework,
        device=options.device,
        scenario=str(scenario.pop("scenario", "offline")),
        settings=scenario,
        batch_size=settings.batch_size,
        dataset=dataset,
        samples=settings.samples,
        seed=settings.seed,
        backend_options=dict(options.extra),
        threads=options.intra_op_threads or None,
        constraints=dict(settings.constraints),
    )
    stored_manifest = parse_manifest(
        manifest, source=f"run {run_id} manifest", base_dir=settings.manifest_dir
    )
    return request, Local(workers=settings.workers, manifest=stored_manifest)


def rerun_stored(
    run_ref: str,
    settings: Settings,
    *,
    repeats: int = 1,
    progress: Progress | None = None,
) -> rerun.RerunVerdict:
    """Rerun a stored run ``repeats`` times and compare; every rerun is stored with its
    group record, which names the original."""
    with session_scope(settings.effective_database_url) as session:
        stored = get_run(session, run_ref)
        run_id, report, manifest = stored.id, stored.report, stored.manifest
        environment = stored.environment
    members = rerun.plan(run_id, repeats, field="--repeats")
    request, local = request_from_run(run_id, report, manifest, settings.datasets_dir)
    next_step = partial(rerun.next_step, members, original=report, original_environment=environment)
    _, verdict = drive(next_step, request, lambda r: run_bench(r, settings, progress, local))
    return verdict
