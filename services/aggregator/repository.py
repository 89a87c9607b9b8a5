"""The only writer of results: runs and their metrics, idempotent by run id."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from services.core.run_report import RunReport, json_safe
from services.core.stored_report import LoadGenReport, load_loadgen_report
from shared.db.models import Metric, Run, utcnow


class RunNotFound(LookupError):
    """No run (or more than one) matches the id or prefix given."""


@dataclass(frozen=True)
class RunRecord:
    id: str
    model_name: str
    model_version: str
    framework: str
    framework_version: str
    scenario: str
    mode: str
    batch_size: int
    dataset: str
    validity: str
    samples_per_second: float | None
    manifest: dict[str, Any]
    settings: dict[str, Any]
    environment: dict[str, Any]
    report: dict[str, Any]
    log_prefix: str
    preprocess_reused: bool = False
    evaluation_id: str | None = None
    # Figures of a workload's own (a construction's latency, training throughput), stored as
    # metrics beside those read from a LoadGen report.
    figures: list[tuple[str, float | None, str]] = field(default_factory=list)


def _ms(value_ns: float | None) -> float | None:
    return None if value_ns is None else value_ns / 1e6


def metrics_from_report(stored: Mapping[str, Any] | LoadGenReport) -> list[tuple[str, float, str]]:
    """The figures of a report as (name, value, unit) rows.

    A figure LoadGen did not produce (NaN in memory, null once stored) is left out.
    """
    report = load_loadgen_report(stored)
    rows: list[tuple[str, float | None, str]] = []
    perf = report.performance
    if perf:
        rows.append(("samples_per_second", perf.samples_per_second, "samples/s"))
        rows.append(("qps", perf.qps, "queries/s"))
        latency = perf.latency
        rows.append(("latency_min", _ms(latency.min_ns), "ms"))
        rows.append(("latency_mean", _ms(latency.mean_ns), "ms"))
        rows.append(("latency_max", _ms(latency.max_ns), "ms"))
        for key, value in latency.percentiles_ns.items():
            rows.append((f"latency_{key}", _ms(value), "ms"))
        rows.append(("valid", 1.0 if perf.validity.result == "VALID" else 0.0, "bool"))
    # The cold start, as its own figure: never inside a measurement; absent when the model
    # stayed loaded from an earlier run on the same worker (model_kept = 1).
    rows.append(("model_load", report.timings.get("model_load_s"), "s"))
    rows.append(("model_kept", report.timings.get("model_cache_hit"), "bool"))
    if report.accuracy:
        rows.append(("top1", report.accuracy.top1, "%"))
        rows.append(("top5", report.accuracy.top5, "%"))
    return finite(rows)


def finite(rows: list[tuple[str, float | None, str]]) -> list[tuple[str, float, str]]:
    """The rows with a figure: None and NaN (a figure not produced) are left out."""
    return [(n, float(v), u) for n, v, u in rows if v is not None and math.isfinite(v)]


def record_from_report(report: RunReport, manifest: dict[str, Any]) -> RunRecord:
    """The row of a report: the same columns for embedded and stack runs."""
    performance = report.measurement.performance
    return RunRecord(
        id=report.run_id,
        evaluation_id=report.evaluation_id,
        model_name=report.model["name"],
        model_version=report.model["version"],
        framework=report.settings.framework,
        framework_version=str(report.measurement.backend.get("version", "unknown")),
        # The user's spelling of the scenario, so filters match both kinds of run.
        scenario=str(report.settings.scenario.get("scenario", "")) or performance.scenario,
        mode=str(report.settings.scenario.get("mode", "performance")),
        batch_size=report.settings.batch_size,
        dataset=str(report.dataset.get("name") or report.settings.dataset),
        validity=report.validity,
        samples_per_second=performance.samples_per_second,
        manifest=manifest,
        settings=json_safe(asdict(report.settings)),
        environment=report.measurement.environment,
        report=report.to_dict(),
        log_prefix=report.log_prefix,
        preprocess_reused=bool(report.preprocessing.get("reused", False)),
    )


def save_run(session: Session, record: RunRecord) -> bool:
    """Insert the run and its metrics; True when this call stored them, False when the
    run was stored already (a second save of the same id changes nothing).

    Race-safe: of two deliveries saving the same run at once, one stores it and the other
    returns False (the insert is ON CONFLICT DO NOTHING on Postgres and SQLite; elsewhere
    a savepoint catches the duplicate key). A figure LoadGen did not produce is NaN in a
    report and null once stored. Nothing stored is read back: the row's JSON (report,
    environment) is most of an aggregator's work per run when it is (docs/scale.md).
    """
    if _stored(session, record.id):
        return False
    values: dict[str, Any] = {
        "id": record.id,
        "evaluation_id": record.evaluation_id,
        "model_name": record.model_name,
        "model_version": record.model_version,
        "framework": record.framework,
        "framework_version": record.framework_version,
        "scenario": record.scenario,
        "mode": record.mode,
        "batch_size": record.batch_size,
        "dataset": record.dataset,
        "validity": record.validity,
        "samples_per_second": json_safe(record.samples_per_second),
        "preprocess_reused": record.preprocess_reused,
        "manifest": json_safe(record.manifest),
        "settings": json_safe(record.settings),
        "environment": json_safe(record.environment),
        "report": json_safe(record.report),
        "log_prefix": record.log_prefix,
    }
    if not _insert_run(session, values):
        if not _stored(session, record.id):  # the other insert rolled back after we waited
            raise RuntimeError(f"run {record.id}: a concurrent save neither won nor lost")
        return False
    session.add_all(
        Metric(run_id=record.id, name=name, value=value, unit=unit)
        for name, value, unit in metrics_from_report(record.report) + finite(record.figures)
    )
    session.flush()
    return True


def _stored(session: Session, run_id: str) -> bool:
    return session.scalar(select(Run.id).where(Run.id == run_id)) is not None


def _insert_run(session: Session, values: dict[str, Any]) -> bool:
    """Insert the runs row; False when a row with that id exists (this call lost a race)."""
    dialect = session.get_bind().dialect.name
    if dialect in {"postgresql", "sqlite"}:
        from sqlalchemy.dialects import postgresql, sqlite

        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        values.setdefault("created_at", utcnow())
        result = session.execute(
            insert(Run).values(**values).on_conflict_do_nothing(index_elements=[Run.id])
        )
        return bool(result.rowcount)  # type: ignore[attr-defined]
    try:
        with session.begin_nested():
            session.add(Run(**values))
    except IntegrityError:
        return False
    return True


def list_runs(
    session: Session,
    *,
    model: str | None = None,
    framework: str | None = None,
    limit: int = 50,
) -> list[Run]:
    query = select(Run).order_by(Run.created_at.desc()).limit(limit)
    if model:
        query = query.where(Run.model_name == model)
    if framework:
        query = query.where(Run.framework == framework)
    return list(session.scalars(query))


def get_run(session: Session, ref: str) -> Run:
    run = session.get(Run, ref)
    if run is not None:
        return run
    matches = list(session.scalars(select(Run).where(Run.id.startswith(ref)).limit(2)))
    if len(matches) != 1:
        reason = "no run" if not matches else "more than one run"
        raise RunNotFound(f"run: {reason} matches {ref!r}; `benchstack results` lists run ids")
    return matches[0]
