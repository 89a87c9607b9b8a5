"""A LoadGen run's outcome: the judged measurement the worker stored, joined with the
evaluation that asked for it into the run's report and row.

The aggregator never parses a log or changes a verdict: the worker's ``measurement.json``
is the judged run, and ``assemble_report`` (the embedded mode's too) makes the report.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.orm import Session

from services.aggregator.repository import RunRecord, record_from_report, save_run
from services.core.manifest_sections import stored_fidelity
from services.core.messages import RunCompleted
from services.core.run_report import BackendSettings, Measurement, RunSettings, assemble_report
from services.core.scenario import ScenarioConfig
from services.inference.measurement import load_measurement
from shared.db.evaluations import Evaluation
from shared.storage import ObjectStore


class IncompleteRun(ValueError):
    """The judged measurement is missing from the message or the store."""


@dataclass(frozen=True)
class InProcess:
    """What a launcher that prepared the data in its own process knows beyond the
    evaluation row (the embedded mode): the model as the user named it (a catalogue name,
    a manifest file), the SUT's worker threads, and the dataset and preprocessing it
    measured itself (samples prepared, decoder, seconds, processes, the shard)."""

    model: str
    workers: int
    dataset: dict[str, Any]
    preprocessing: dict[str, Any]


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


def read(
    evaluation: Evaluation,
    message: RunCompleted,
    store: ObjectStore,
    in_process: InProcess | None = None,
) -> RunRecord:
    """The run as the worker judged it, joined with the evaluation that asked for it.

    The aggregator's and the embedded launcher's (whose evaluation is never stored: no id,
    and ``in_process`` says what it measured around the run)."""
    key = message.log_keys.get("measurement")
    if key is None:
        raise IncompleteRun(f"log_keys: 'measurement' is missing; got {sorted(message.log_keys)}")
    measurement, keys = load_measurement(store, key)
    manifest = dict(evaluation.manifest)
    manifest_dir = manifest.pop("base_dir", None)
    settings = run_settings(evaluation, measurement)
    dataset: dict[str, Any] = {"name": evaluation.dataset, "samples": evaluation.dataset_count}
    preprocessing: dict[str, Any] = {
        "fidelity": stored_fidelity(evaluation.manifest),
        "reused": evaluation.preprocess_reused,
        "shards": [s.key for s in evaluation.shards],
    }
    # Where the files are on this machine: only an embedded run's report names them (its
    # user is the server). A manifest read from a folder resolves its relative paths there
    # (a rerun too), and the logs are named where a person finds them. A stack run's report
    # is read by clients, so it names object keys only (shared/server_paths.py).
    locations: dict[str, str] = {}
    if in_process is not None:
        settings = replace(
            settings,
            model=in_process.model,
            workers=in_process.workers,
            manifest_dir=manifest_dir,
        )
        dataset, preprocessing = dict(in_process.dataset), dict(in_process.preprocessing)
        locations = {name: store.describe(key) for name, key in keys.items()}
    report = assemble_report(
        run_id=message.run_id,
        evaluation_id=evaluation.id or None,
        model={"name": evaluation.model_name, "version": evaluation.model_version},
        settings=settings,
        measurement=measurement,
        dataset=dataset | {"failed": measurement.input_errors},
        preprocessing=preprocessing,
        logs=keys,
        log_locations=locations,
        log_prefix=message.log_prefix,
        group=_group_of(evaluation, message.agent_id),
    )
    return record_from_report(report, manifest)


def _group_of(evaluation: Evaluation, agent_id: str) -> dict[str, Any] | None:
    """The run's group as its report names it: a fan-out's role is the agent; a sweep
    point's is its parameter and value (Evaluation.group_info)."""
    info, group_id = evaluation.group_info, evaluation.group_id
    if info:
        # The group's id is its own column; a record given without one is kept as given.
        return {**info, "id": group_id} if group_id else dict(info)
    if not group_id:
        return None
    return {"kind": "fan-out", "id": group_id, "role": agent_id}


def save(
    session: Session, evaluation: Evaluation, message: RunCompleted, record: RunRecord
) -> None:
    save_run(session, record)
