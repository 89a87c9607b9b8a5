"""A small GraphQL client of the benchstack API, for the CLI (submit, results --server)."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from services.cli.figure_cells import SHOWN_FIGURES_FIELDS, from_graphql
from services.core.shown_figures import figure_named
from shared.settings import get_settings

TOKEN_FILE_NAME = "token"


class RemoteError(ValueError):
    """The API refused a request or answered with errors; the message says which."""


class RemoteUnavailable(RemoteError):
    """The API could not be reached or answered 503 (a dependency of it is down): trying
    again later may succeed."""


def token_file() -> Path:
    return get_settings().data_dir / TOKEN_FILE_NAME


def save_token(token: str) -> Path:
    path = token_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    # Owner-only from the first byte: the token is a password.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    return path


def resolve_token(token: str | None) -> str:
    if token:
        return token
    path = token_file()
    if path.is_file():
        return path.read_text().strip()
    raise RemoteError(
        "token: none given; pass --token, set BENCHSTACK_TOKEN, or run `benchstack token create`"
    )


def graphql(
    server_url: str,
    token: str | None,
    query: str,
    variables: dict[str, Any] | None = None,
    *,
    timeout_s: float = 30.0,
) -> dict[str, Any]:
    url = server_url.rstrip("/") + "/graphql"
    try:
        response = httpx.post(
            url,
            json={"query": query, "variables": variables or {}},
            headers={"Authorization": f"Bearer {resolve_token(token)}"},
            timeout=timeout_s,
        )
    except httpx.HTTPError as exc:
        raise RemoteUnavailable(f"server: cannot reach {url}: {exc}") from None
    if response.status_code == 401:
        # The API says why (unknown, revoked, expired and when): show that, not a guess.
        try:
            detail = str(response.json().get("detail") or "")
        except ValueError:
            detail = ""
        raise RemoteError(
            f"token: the API refused it (401): {detail or 'no reason given'}; "
            "create one with `benchstack token create`"
        )
    if response.status_code == 503:
        raise RemoteUnavailable(
            f"server: {url} answered 503 (try again shortly): {response.text[:300]}"
        )
    if response.status_code != 200:
        raise RemoteError(f"server: {url} answered {response.status_code}: {response.text[:300]}")
    body: dict[str, Any] = response.json()
    if body.get("errors"):
        raise RemoteError("; ".join(e.get("message", str(e)) for e in body["errors"]))
    data: dict[str, Any] = body["data"]
    return data


RESULTS_QUERY = (
    """
query Results($where: EvaluationFilter, $first: Int!) {
  evaluations(where: $where, first: $first) {
    items {
      id
      runs {
        id createdAt modelName modelVersion framework frameworkVersion scenario mode
        batchSize samplesPerSecond validity stability preprocessReused
        confidence { samplesPerSecond { low high } latencyP99 { low high } }
        metrics { name value unit }
        """
    + SHOWN_FIGURES_FIELDS
    + """
      }
    }
  }
}
"""
)


def _pair(run: dict[str, Any], name: str) -> list[float] | None:
    item = (run.get("confidence") or {}).get(name) or {}
    if item.get("low") is None or item.get("high") is None:
        return None
    return [float(item["low"]), float(item["high"])]


def list_remote_results(
    server_url: str,
    token: str | None,
    *,
    model: str | None = None,
    framework: str | None = None,
    limit: int = 50,
) -> list[dict[str, Any]]:
    """The caller's runs from the API, newest first, in the rows `benchstack results` prints."""
    where: dict[str, Any] = {"status": "SUCCEEDED"}
    if model:
        where["model"] = model
    if framework:
        where["framework"] = framework
    data = graphql(server_url, token, RESULTS_QUERY, {"where": where, "first": limit})
    rows: list[dict[str, Any]] = []
    for evaluation in data["evaluations"]["items"]:
        for run in evaluation["runs"]:
            metrics = {m["name"]: m["value"] for m in run["metrics"]}
            # What the one rule shows of the run (an Offline run has no p90 among them).
            figures = from_graphql(run.get("shownFigures"))
            p90 = figure_named(figures, "latency_p90")
            rows.append(
                {
                    "run_id": run["id"],
                    "figures": [f.to_dict() for f in figures],
                    "evaluation_id": evaluation["id"],
                    "created_at": str(run["createdAt"])[:19],
                    "model": f"{run['modelName']}:{run['modelVersion']}",
                    "framework": f"{run['framework']} {run['frameworkVersion']}",
                    "scenario": run["scenario"],
                    "mode": run["mode"],
                    "batch_size": run["batchSize"],
                    "samples_per_second": run["samplesPerSecond"],
                    "samples_per_second_interval": _pair(run, "samplesPerSecond"),
                    "p99_sut_interval_ms": _pair(run, "latencyP99"),
                    "p90_ms": None if p90 is None else p90.value,
                    "validity": run["validity"],
                    "stability": run["stability"],
                    "preprocess_reused": run["preprocessReused"],
                    "metrics": metrics,
                }
            )
    rows.sort(key=lambda r: r["created_at"], reverse=True)
    return rows[:limit]


SUBMIT_MUTATION = """
mutation Submit($input: SubmitEvaluationInput!) {
  submitEvaluation(input: $input) {
    __typename
    ... on Evaluation { id state }
    ... on Comparison { id }
    ... on UserError { message field }
  }
}
"""

COMPARE_QUERY = """
query Compare($groupId: String!) {
  compare(groupId: $groupId) {
    id model scenario done
    rows {
      evaluationId state reason agentId machine hostname cpuModel arch logicalCores memoryGib
      gpus gpuDriver framework frameworkVersion device threads runId samplesPerSecond
      latencyP50Ms latencyP90Ms latencyP99Ms validity stability overlapped hostBusy
      samplesPerSecondLow samplesPerSecondHigh latencyP99LowMs latencyP99HighMs intervalReason
      workload trainingSettings jitterImagesPerSecond meanStepMs workloadSettings
      workloadFigures
    }
  }
}
"""

EVALUATION_QUERY = """
query One($id: String!) {
  evaluation(id: $id) {
    id state reason shardsTotal shardsReady preprocessReused runId
    runs { id samplesPerSecond validity stability metrics { name value unit } report }
  }
}
"""


# Tries of one submission when the API is unreachable or answers 503, and the wait
# before the second (doubled before each later one): the same client key each time, so
# a try the API stored before failing to answer is read back, never stored twice.
SUBMIT_TRIES = 3
SUBMIT_RETRY_WAIT_S = 2.0


def submit_evaluation(
    server_url: str,
    token: str | None,
    payload: dict[str, Any],
    *,
    retry_wait_s: float = SUBMIT_RETRY_WAIT_S,
) -> str:
    """Submit; returns the evaluation id (the group id of a fan-out), or raises RemoteError
    with the typed error's text. Sends a new client key (``clientKey``, the API's
    idempotency key) unless the payload has one, and tries again with it up to
    SUBMIT_TRIES times while the API is unreachable or answers 503."""
    payload = {"clientKey": str(uuid.uuid4()), **payload}
    for attempt in range(1, SUBMIT_TRIES + 1):
        try:
            data = graphql(server_url, token, SUBMIT_MUTATION, {"input": payload})
            break
        except RemoteUnavailable:
            if attempt == SUBMIT_TRIES:
                raise
            time.sleep(retry_wait_s * 2 ** (attempt - 1))
    return str(answer_of(data["submitEvaluation"], "Evaluation", "Comparison")["id"])


def get_comparison(server_url: str, token: str | None, group_id: str) -> dict[str, Any]:
    found = graphql(server_url, token, COMPARE_QUERY, {"groupId": group_id})["compare"]
    return _visible(found, f"group: no fan-out {group_id!r} visible to this token")


CANCEL_MUTATION = """
mutation Cancel($id: String!) {
  cancelEvaluation(id: $id) {
    __typename
    ... on Evaluation { id state reason }
    ... on UserError { message field }
  }
}
"""


def cancel_evaluation(server_url: str, token: str | None, evaluation_id: str) -> str:
    """Cancel; returns the new state, or raises RemoteError with the typed error's text."""
    result = graphql(server_url, token, CANCEL_MUTATION, {"id": evaluation_id})
    return str(answer_of(result["cancelEvaluation"], "Evaluation")["state"])


CANCEL_GROUP_MUTATION = """
mutation CancelGroup($id: String!) {
  cancelGroup(groupId: $id) {
    __typename
    ... on GroupCancelled { groupId cancelled alreadyFinished }
    ... on UserError { message field }
  }
}
"""


def cancel_group(server_url: str, token: str | None, group_id: str) -> dict[str, Any]:
    """Cancel a group's unfinished members; returns {groupId, cancelled, alreadyFinished}."""
    answer = graphql(server_url, token, CANCEL_GROUP_MUTATION, {"id": group_id})["cancelGroup"]
    return answer_of(answer, "GroupCancelled")


def get_evaluation(server_url: str, token: str | None, evaluation_id: str) -> dict[str, Any]:
    found = graphql(server_url, token, EVALUATION_QUERY, {"id": evaluation_id})["evaluation"]
    return _visible(found, f"id: no evaluation {evaluation_id!r} visible to this token")


def answer_of(answer: dict[str, Any], *expected: str) -> dict[str, Any]:
    """A union field's answer when its type is one of ``expected``; else a RemoteError with
    the typed error's text and the field at fault, where the error names one."""
    if answer["__typename"] in expected:
        return answer
    where = f" ({answer['field']})" if answer.get("field") else ""
    raise RemoteError(f"{answer['__typename']}{where}: {answer.get('message', '')}")


def _visible(found: dict[str, Any] | None, missing: str) -> dict[str, Any]:
    """What a query by id found; a RemoteError saying ``missing`` when the token sees none."""
    if found is None:
        raise RemoteError(missing)
    return found
