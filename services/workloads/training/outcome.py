"""A training evaluation's outcome stored: a run whose metrics are the training figures
(`benchstack train`'s: images/s with its standard error, jitter, data share, memory)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from services.aggregator.outcomes import load_outcome, outcome_record
from services.aggregator.repository import RunRecord, save_run
from services.core.messages import RunCompleted
from shared.db.evaluations import Evaluation
from shared.storage import ObjectStore


def read(evaluation: Evaluation, message: RunCompleted, store: ObjectStore) -> dict[str, Any]:
    """The outcome document the agent wrote (training.json)."""
    return load_outcome(store, message.log_keys["training"], "training")


def training_metrics(training: dict[str, Any]) -> list[tuple[str, float | None, str]]:
    statistics = training["statistics"]
    return [
        # batch / mean step time (step_timing), not a mean of per-step rates.
        ("images_per_second", statistics.get("images_per_s"), "images/s"),
        ("images_per_second_se", statistics.get("standard_error_images_per_s"), "images/s"),
        ("step_time_mean", _ms(statistics.get("mean_step_s")), "ms"),
        ("images_per_second_jitter", statistics.get("jitter_images_per_s"), "images/s"),
        ("data_share", statistics.get("data_share"), "ratio"),
        ("steps", statistics.get("steps"), "count"),
        ("peak_rss", _mib(training.get("peak_rss_bytes")), "MiB"),
        ("cuda_max_allocated", _mib(training.get("cuda_max_allocated_bytes")), "MiB"),
    ]


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000.0


def _mib(count: float | None) -> float | None:
    return None if count is None else count / 2**20


def training_record(
    evaluation: Evaluation, message: RunCompleted, document: dict[str, Any]
) -> RunRecord:
    settings = document["settings"]
    return outcome_record(
        evaluation,
        message,
        document,
        scenario="training",
        dataset=str(settings.get("data", "synthetic")),
        # Not LoadGen's verdict: the training steps were timed (no validity rules apply).
        validity="MEASURED",
        samples_per_second=document["statistics"].get("images_per_s"),
        figures=training_metrics(document),
        settings={"training": settings},
    )


def save(
    session: Session, evaluation: Evaluation, message: RunCompleted, document: dict[str, Any]
) -> None:
    save_run(session, training_record(evaluation, message, document))
