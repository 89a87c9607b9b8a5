"""A DLBricks evaluation's outcome stored: the timings its agent measured (new ones only:
a system keeps its first figure of a brick), the system's floor, the model's recipe, and
the run with its constructed latency as metrics."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy.orm import Session

from services.aggregator.repository import RunRecord, save_run
from services.bricks.store import save_measured, save_recipe
from shared.db.evaluations import Evaluation
from shared.messages import RunCompleted
from shared.storage import ObjectStore

# The figures of a construction stored as metrics (construct.Construction field -> name).
CONSTRUCTED = {
    "sequential_ms": "constructed_sequential",
    "critical_path_ms": "constructed_critical_path",
    "floor_corrected_ms": "constructed_floor_corrected",
}


def load_bricks(store: ObjectStore, key: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(store.get_bytes(key))
    if document.get("kind") != "bricks":
        raise ValueError(f"log_keys.bricks: {key} is not a DLBricks outcome")
    return document


def bricks_metrics(bricks: dict[str, Any]) -> list[tuple[str, float | None, str]]:
    constructed = bricks["constructed"]
    rows: list[tuple[str, float | None, str]] = [
        (name, constructed.get(field), "ms") for field, name in CONSTRUCTED.items()
    ]
    rows += [
        ("layers", constructed["layers"], "count"),
        ("bricks_unique", constructed["unique_bricks"], "count"),
        ("bricks_measured", len(bricks["measured"]), "count"),
        ("bricks_reused", len(bricks["reused"]), "count"),
        ("bricks_missing", len(constructed["missing"]), "count"),
        ("bricks_measuring", bricks["measuring_s"], "s"),
    ]
    return rows


def bricks_record(
    evaluation: Evaluation, message: RunCompleted, document: dict[str, Any]
) -> RunRecord:
    environment = document.get("environment") or {}
    packages = environment.get("packages") or {}
    complete = not document["constructed"]["missing"]
    report = {
        "kind": "bricks",
        "run_id": message.run_id,
        "evaluation_id": evaluation.id,
        "bricks": {k: v for k, v in document.items() if k not in ("environment", "log_keys")},
        "logs": dict(message.log_keys),
    }
    return RunRecord(
        id=message.run_id,
        evaluation_id=evaluation.id,
        model_name=evaluation.model_name,
        model_version=evaluation.model_version,
        framework=evaluation.framework,
        framework_version=str(packages.get("torch", "")),
        scenario="single-stream",
        mode="bricks",
        batch_size=evaluation.batch_size,
        dataset="bricks",
        # Not LoadGen's verdict on one run: whether every brick had a figure to sum.
        validity="CONSTRUCTED" if complete else "INCOMPLETE",
        samples_per_second=None,
        manifest=evaluation.manifest,
        settings={
            "bricks": document["options"],
            "batch_size": evaluation.batch_size,
            "system": document["system"],
            "constraints": dict(evaluation.constraints or {}),
        },
        environment=environment,
        report=report,
        log_prefix=message.log_prefix,
    )


def save_bricks_run(
    session: Session, evaluation: Evaluation, message: RunCompleted, document: dict[str, Any]
) -> None:
    save_measured(
        session, document["system"], document["measured"], document["floor"], evaluation.id
    )
    save_recipe(session, document["recipe"])
    save_run(session, bricks_record(evaluation, message, document))
