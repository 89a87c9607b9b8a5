"""A generative evaluation's outcome stored: a run whose verdict is LoadGen's and whose
figures are the token figures (TTFT, TPOT, tokens/s, goodput) of generative.json."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from services.aggregator.outcomes import load_outcome, outcome_record
from services.aggregator.repository import RunRecord, save_run
from services.core.messages import RunCompleted
from shared.db.evaluations import Evaluation
from shared.storage import ObjectStore


def read(evaluation: Evaluation, message: RunCompleted, store: ObjectStore) -> dict[str, Any]:
    return load_outcome(store, message.log_keys["generative"], "generative")


def generative_record(
    evaluation: Evaluation, message: RunCompleted, document: dict[str, Any]
) -> RunRecord:
    figures = document["figures"]
    return outcome_record(
        evaluation,
        message,
        document,
        scenario=str(document["options"]["scenario"]),
        dataset=str(document["prompts"].get("source", "synthetic prompts"))[:200],
        validity=str(document["loadgen"]["validity"]),
        samples_per_second=figures["requests_per_s"]["estimate"],
        figures=[(name, f["estimate"], f["unit"]) for name, f in figures.items()],
        settings={"generative": document["options"]},
    )


def save(
    session: Session, evaluation: Evaluation, message: RunCompleted, document: dict[str, Any]
) -> None:
    save_run(session, generative_record(evaluation, message, document))
