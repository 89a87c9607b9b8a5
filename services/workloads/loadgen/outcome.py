"""A LoadGen run's outcome: the judged measurement the worker stored, joined with the
evaluation that asked for it into the run's report and row.

The aggregator never parses a log or changes a verdict: the worker's ``measurement.json``
is the judged run, and ``assemble_report`` (the embedded mode's too) makes the report.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from services.aggregator.repository import RunRecord, record_from_report, save_run
from services.core.scenario import ScenarioConfig
from services.inference.measurement import load_measurement
from shared.db.evaluations import Evaluation
from shared.manifest_sections import stored_fidelity
from shared.messages import RunCompleted
from shared.run_report import BackendSettings, Measurement, RunSettings, assemble_report
from shared.storage import ObjectStore


class IncompleteRun(ValueError):
    """The judged measurement is missing from the message or the store."""


def run_settings(evaluation: Evaluation, measurement: Measurement) -> RunSettings:
    """What was asked for, with the threads the agent actually applied."""
    applied = (measurement.agent.get("backend_options") or {}) if measurement.agent else {}
    return RunSettings(
        model=evaluation.model_name,
        framework=evaluation.framework,
        scenario=ScenarioConfig.model_validate(evaluation.scenario).model_dump(mode="json"),
        batch_size=evaluation.batch_size,
        dataset=evaluation.dataset,
        samples=evaluation.dataset_count,
        seed=evaluation.seed,
        backend_options=BackendSettings(
            device=evaluation.device,
            intra_op_threads=int(applied.get("intra_op_threads", 0)),
            inter_op_threads=int(applied.get("inter_op_threads", 0)),
            extra=dict(applied.get("extra", evaluation.backend_options)),
        ),
        constraints=dict(evaluation.constraints or {}),
        trace_level=evaluation.trace_level,
    )


def read(evaluation: Evaluation, message: RunCompleted, store: ObjectStore) -> RunRecord:
    """The run as the worker judged it, joined with the evaluation that asked for it."""
    key = message.log_keys.get("measurement")
    if key is None:
        raise IncompleteRun(f"log_keys: 'measurement' is missing; got {sorted(message.log_keys)}")
    measurement, keys = load_measurement(store, key)
    report = assemble_report(
        run_id=message.run_id,
        evaluation_id=evaluation.id,
        model={"name": evaluation.model_name, "version": evaluation.model_version},
        settings=run_settings(evaluation, measurement),
        measurement=measurement,
        dataset={
            "name": evaluation.dataset,
            "samples": evaluation.dataset_count,
            "failed": measurement.input_errors,
        },
        preprocessing={
            "fidelity": stored_fidelity(evaluation.manifest),
            "reused": evaluation.preprocess_reused,
            "shards": [s.key for s in evaluation.shards],
        },
        logs=keys,
        log_locations={name: store.describe(key) for name, key in keys.items()},
        log_prefix=message.log_prefix,
        group=_group_of(evaluation, message.agent_id),
    )
    return record_from_report(report, evaluation.manifest)


def _group_of(evaluation: Evaluation, agent_id: str) -> dict[str, Any] | None:
    """The run's group as its report names it: a fan-out's role is the agent; a sweep
    point's is its parameter and value (Evaluation.group_info)."""
    if not evaluation.group_id:
        return None
    if evaluation.group_info:
        return {**evaluation.group_info, "id": evaluation.group_id}
    return {"kind": "fan-out", "id": evaluation.group_id, "role": agent_id}


def save(
    session: Session, evaluation: Evaluation, message: RunCompleted, record: RunRecord
) -> None:
    save_run(session, record)
