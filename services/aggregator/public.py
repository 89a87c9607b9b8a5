"""A stack run's outcome as clients may read it: no path of the server's folders.

The aggregator stores what the workload read with every path under the server's folders
(datasets, models, objects, data) named relative to its folder (shared/server_paths.py):
the report, the settings, the dataset column and the environment. The manifest column
keeps its paths: no client reads it (the GraphQL Run has no manifest field) and a rerun on
the server resolves the model's files with it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from services.aggregator.repository import RunRecord
from shared.server_paths import without_roots


def public_outcome(outcome: Any, roots: tuple[str, ...]) -> Any:
    """A loadgen ``RunRecord`` or another workload's outcome document (a dict), without
    the server's folders in what clients read."""
    if isinstance(outcome, RunRecord):
        return replace(
            outcome,
            dataset=without_roots(outcome.dataset, roots),
            settings=without_roots(outcome.settings, roots),
            environment=without_roots(outcome.environment, roots),
            report=without_roots(outcome.report, roots),
        )
    if isinstance(outcome, dict):
        return without_roots(outcome, roots)
    return outcome
