"""A DLBricks evaluation's outcome stored: the timings its agent measured (new ones only:
a system keeps its first figure of a brick), the system's floor, the model's recipe, and
the run with its constructed latency as metrics."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from services.aggregator.outcomes import load_outcome, outcome_record
from services.aggregator.repository import RunRecord, save_run
from services.core.messages import RunCompleted
from services.workloads.bricks.store import save_measured, save_recipe
from shared.db.evaluations import Evaluation
from shared.storage import ObjectStore

# The figures of a construction stored as metrics (construct.Construction field -> name).
CONSTRUCTED = {
    "sequential_ms": "constructed_sequential",
    "critical_path_ms": "constructed_critical_path",
    "floor_corrected_ms": "constructed_floor_corrected",
    "cold_weights_ms": "constructed_cold_weights",
}


def read(evaluation: Evaluation, message: RunCompleted, store: ObjectStore) -> dict[str, Any]:
    """The outcome document the agent wrote (bricks.json)."""
    return load_outcome(store, message.log_keys["bricks"], "bricks")


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
    return outcome_record(
        evaluation,
        message,
        document,
        scenario="single-stream",
        dataset="bricks",
        # Not LoadGen's verdict on one run: whether every brick had a figure to sum.
        validity="INCOMPLETE" if document["constructed"]["missing"] else "CONSTRUCTED",
        samples_per_second=None,
        figures=bricks_metrics(document),
        settings={
            "bricks": document["options"],
            "batch_size": evaluation.batch_size,
            "system": document["system"],
        },
    )


def save(
    session: Session, evaluation: Evaluation, message: RunCompleted, document: dict[str, Any]
) -> None:
    save_measured(
        session,
        document["system"],
        document["measured"],
        document["floor"],
        evaluation.id,
        document.get("memory"),  # absent from an agent older than the figure
    )
    save_recipe(session, document["recipe"])
    save_run(session, bricks_record(evaluation, message, document))
