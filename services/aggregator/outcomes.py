"""What the stored run of a workload without LoadGen logs (DLBricks, training) shares:
the outcome document read from the object store, and its row, with the report holding the
document (less the environment, which has its own column) under its kind."""

from __future__ import annotations

import json
from typing import Any

from services.aggregator.repository import RunRecord
from services.core.messages import RunCompleted
from shared.db.evaluations import Evaluation
from shared.storage import ObjectStore


def load_outcome(store: ObjectStore, key: str, kind: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(store.get_bytes(key))
    if document.get("kind") != kind:
        raise ValueError(f"log_keys.{kind}: {key} is not a {kind} outcome")
    return document


def outcome_record(
    evaluation: Evaluation,
    message: RunCompleted,
    document: dict[str, Any],
    *,
    scenario: str,
    dataset: str,
    validity: str,
    samples_per_second: float | None,
    figures: list[tuple[str, float | None, str]],
    settings: dict[str, Any],
) -> RunRecord:
    kind = str(document["kind"])
    environment = document.get("environment") or {}
    packages = environment.get("packages") or {}
    report = {
        "kind": kind,
        "run_id": message.run_id,
        # None for a run the embedded launcher measured: it stores no evaluation.
        "evaluation_id": evaluation.id or None,
        kind: {k: v for k, v in document.items() if k not in ("environment", "log_keys")},
        "logs": dict(message.log_keys),
    }
    info, group_id = evaluation.group_info, evaluation.group_id
    if info:
        # Its group record, as a LoadGen run's report holds it: a training scaling's rank.
        report["group"] = {**info, "id": group_id} if group_id else dict(info)
    return RunRecord(
        id=message.run_id,
        evaluation_id=evaluation.id or None,
        model_name=evaluation.model_name,
        model_version=evaluation.model_version,
        framework=evaluation.framework,
        framework_version=str(packages.get(evaluation.framework, "")),
        scenario=scenario,
        mode=kind,
        batch_size=evaluation.batch_size,
        dataset=dataset,
        validity=validity,
        samples_per_second=samples_per_second,
        manifest=evaluation.manifest,
        settings={**settings, "constraints": dict(evaluation.constraints or {})},
        environment=environment,
        report=report,
        log_prefix=message.log_prefix,
        figures=figures,
    )
