"""``benchstack history --server``: the API's ``history`` query, answered in the shape the
local history prints (``services/cli/commands/history.py``'s ``series_rows``)."""

from __future__ import annotations

from typing import Any

from services.cli.remote import answer_of, graphql

HISTORY_QUERY = """
query History($model: String!, $figure: String!, $system: String) {
  history(model: $model, figure: $figure, system: $system) {
    __typename
    ... on History {
      figure
      series {
        system unit
        points { runId createdAt value interval validity stabilityVerdict busy changes }
        changePoints { runId before after change band better interval changes }
      }
    }
    ... on InvalidInput { message field }
  }
}
"""


def _snake(item: dict[str, Any]) -> dict[str, Any]:
    return {"".join(f"_{c.lower()}" if c.isupper() else c for c in k): v for k, v in item.items()}


def remote_history(
    server: str, token: str | None, model: str, figure: str, system: str | None
) -> list[dict[str, Any]]:
    """Each series as a dict: model, system, figure, unit, points, change_points."""
    variables = {"model": model, "figure": figure, "system": system}
    found = answer_of(graphql(server, token, HISTORY_QUERY, variables)["history"], "History")
    return [
        {
            "model": model,
            "system": series["system"],
            "figure": found["figure"],
            "unit": series["unit"],
            "points": [_snake(p) for p in series["points"]],
            "change_points": [_snake(c) for c in series["changePoints"]],
        }
        for series in found["series"]
    ]
