"""A stack run's outcome as clients may read it: no path of the server's folders.

The aggregator stores what the loadgen workload read with every path under the server's folders
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
    """A loadgen ``RunRecord`` without the server's folders in what clients read.

    Another workload's outcome (a training or DLBricks document, a dict) is stored as it
    is: its save also writes other tables from it (a DLBricks recipe and its bricks),
    which the server reads back; GraphQL serves its run through the same filter
    (services/api/graphql/public_paths.py)."""
    if isinstance(outcome, RunRecord):
        return replace(
            outcome,
            dataset=without_roots(outcome.dataset, roots),
            settings=without_roots(outcome.settings, roots),
            environment=without_roots(outcome.environment, roots),
            report=without_roots(outcome.report, roots),
        )
    return outcome
