"""A measured run's files in the object store, the same layout for embedded and stack runs:

``runs/<run_id>/attempt-<n>/`` holds LoadGen's logs, the raw per-sample arrays and, written
last, ``measurement.json`` (the judged ``Measurement`` plus the keys of the other files).
Its presence means the attempt is whole.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from services.core.messages import RunCompleted
from services.core.run_report import MEASUREMENT_FILE, Measurement, attempt_prefix, outcome_file
from services.inference.run import RunOutcome
from shared.allocator import minor_page_faults
from shared.db.evaluations import Evaluation
from shared.environment import capture_environment
from shared.storage import ObjectStore


class PhaseClock:
    """Wall clock of the phases around a measurement (Measurement.timings)."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Records ``<name>_s``, ``<name>_started_at`` / ``_ended_at`` (Unix seconds) and
        ``<name>_minor_faults``: pages the kernel mapped for this process meanwhile (an
        allocator handing memory back shows here, shared/allocator.py)."""
        started_at, start, faults = time.time(), time.perf_counter(), minor_page_faults()
        try:
            yield
        finally:
            self.timings[f"{name}_s"] = time.perf_counter() - start
            self.timings[f"{name}_minor_faults"] = minor_page_faults() - faults
            self.timings[f"{name}_started_at"] = started_at
            self.timings[f"{name}_ended_at"] = started_at + self.timings[f"{name}_s"]


def measurement_of(
    outcome: RunOutcome,
    *,
    agent: dict[str, Any] | None = None,
    host: dict[str, Any] | None = None,
    environment: dict[str, Any] | None = None,
    input_errors: list[str] | None = None,
    profile: dict[str, Any] | None = None,
    timings: dict[str, float] | None = None,
) -> Measurement:
    """The run as judged here: LoadGen's verdict with what only the SUT saw applied."""
    return Measurement(
        performance=outcome.report,
        stability=outcome.stability,
        accuracy=outcome.accuracy,
        backend=dict(outcome.backend_info),
        sut_latency=outcome.sut_latency,
        failed_samples=outcome.failed_samples,
        errors=outcome.errors[:100],
        warm_up=dict(outcome.warm_up),
        seeds=dict(outcome.seeds),
        environment=environment if environment is not None else capture_environment(),
        host={
            **(host or {}),
            "load": outcome.host_load.to_dict() if outcome.host_load else None,
            "busy": bool(outcome.host_load and outcome.host_load.busy),
        },
        agent=agent or {},
        warnings=list(outcome.warnings),
        hints=list(outcome.hints),
        confidence=outcome.confidence,
        input_errors=list(input_errors or [])[:100],
        profile=profile,
        timings=dict(timings or {}),
    )


def measurement_key(prefix: str) -> str:
    return f"{prefix}/{MEASUREMENT_FILE}"


def store_attempt(
    store: ObjectStore, prefix: str, log_files: dict[str, Path], measurement: Measurement
) -> dict[str, str]:
    """Upload the files, then measurement.json last; returns logical name -> object key."""
    keys: dict[str, str] = {}
    for name, path in log_files.items():
        key = f"{prefix}/{name}"
        store.put_bytes(key, path.read_bytes())
        keys[name] = key
    keys["measurement"] = measurement_key(prefix)
    # The keys too, so that a redelivery can publish RunCompleted again from the store.
    document = {**measurement.to_dict(), "log_keys": dict(keys)}
    store.put_bytes(keys["measurement"], json.dumps(document).encode())
    return keys


def store_outcome(
    store: ObjectStore, prefix: str, kind: str, document: dict[str, Any]
) -> dict[str, str]:
    """The outcome of a workload without LoadGen logs (``kind``: its name, e.g. "bricks"),
    written as ``<kind>.json`` under ``prefix`` with its own key beside it, as
    measurement.json carries its keys; returns {kind: key}."""
    key = f"{prefix}/{outcome_file(kind)}"
    store.put_bytes(key, json.dumps({**document, "log_keys": {kind: key}}).encode())
    return {kind: key}


def load_measurement(store: ObjectStore, key: str) -> tuple[Measurement, dict[str, str]]:
    """The judged measurement and the keys of its files."""
    document: dict[str, Any] = json.loads(store.get_bytes(key))
    keys = {str(k): str(v) for k, v in (document.pop("log_keys", None) or {}).items()}
    keys.setdefault("measurement", key)
    return Measurement.from_dict(document), keys


def outcome_key(evaluation: Evaluation) -> str:
    """The object an AGGREGATING evaluation's run stored its outcome in: what a lost one is
    named by (LoadGen's measurement, or a workload's own outcome document)."""
    prefix = attempt_prefix(evaluation.run_id or "", evaluation.attempt)
    if evaluation.workload in (None, "", "loadgen"):
        return measurement_key(prefix)
    return f"{prefix}/{outcome_file(evaluation.workload)}"


def stored_completion(store: ObjectStore, evaluation: Evaluation) -> RunCompleted | None:
    """RunCompleted of the attempt that moved the evaluation to AGGREGATING, rebuilt from
    its stored measurement (a redelivery or a sweep re-sends it); None when it is missing."""
    if not evaluation.run_id or not evaluation.attempt:
        return None
    prefix = attempt_prefix(evaluation.run_id, evaluation.attempt)
    key = measurement_key(prefix)
    if store.exists(key):
        _, keys = load_measurement(store, key)
    elif store.exists(outcome := f"{prefix}/{outcome_file(evaluation.workload)}"):
        keys = {evaluation.workload: outcome}  # a workload's without LoadGen logs
    else:
        return None
    return RunCompleted(
        evaluation_id=evaluation.id,
        run_id=evaluation.run_id,
        agent_id=evaluation.agent_id or "",
        log_prefix=prefix,
        log_keys=keys,
    )
