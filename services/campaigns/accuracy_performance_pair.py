"""Submission-style evaluation: an accuracy pass and a performance pass, stored as two runs
that name each other (MLPerf submissions need both from the same system and settings)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from services.embedded.bench import BenchRequest

RunFn = Callable[[BenchRequest], dict[str, Any]]


def run_accuracy_performance_pair(request: BenchRequest, run: RunFn) -> dict[str, dict[str, Any]]:
    """Accuracy first (it fails fast on a bad labels file), then performance."""
    runs = {"accuracy": str(uuid.uuid4()), "performance": str(uuid.uuid4())}
    submission = {"kind": "accuracy-performance-pair", "id": str(uuid.uuid4()), "runs": runs}
    reports: dict[str, dict[str, Any]] = {}
    for role, run_id in runs.items():
        scenario = request.scenario.model_copy(update={"mode": role})
        reports[role] = run(
            replace(
                request,
                scenario=scenario,
                run_id=run_id,
                group={**submission, "role": role},
            )
        )
    return reports
