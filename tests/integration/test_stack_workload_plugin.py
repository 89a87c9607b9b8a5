"""A workload is one folder: a throw-away one dropped into services/workloads/ is
submitted through GraphQL by its name, validated by its own options model, measured by the
agent in its measurement child, and stored by the aggregator with its own figures, with
nothing else edited. The stack starts after the folder is in place (its processes find
the workloads when they first look)."""

from __future__ import annotations

import importlib
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import services.workloads as workloads_package
from tests.integration.conftest import GraphQLClient, running_stack
from tests.support.ephemeral import EphemeralStack
from tests.support.throwaway_workload import write_workload_folder

pytestmark = pytest.mark.integration
SUMMARY = "a throw-away workload for the plug-in test"

SUBMIT = """
mutation($input: SubmitEvaluationInput!) {
  submitEvaluation(input: $input) {
    __typename ... on Evaluation { id } ... on UserError { message field }
  }
}
"""
RESULT = """
query($id: String!) {
  evaluation(id: $id) {
    state reason
    runs { validity metrics { name value unit } }
  }
}
"""


@pytest.fixture(scope="module")
def throwaway() -> Iterator[str]:
    name = f"throwaway_{uuid.uuid4().hex[:8]}"
    folder = Path(workloads_package.__path__[0]) / name
    folder.mkdir()
    try:
        write_workload_folder(folder, SUMMARY)
        importlib.invalidate_caches()
        workloads_package.workloads.cache_clear()
        yield name
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        workloads_package.workloads.cache_clear()


@pytest.fixture(scope="module")
def client(throwaway: str) -> Iterator[GraphQLClient]:
    for stack in running_stack(EphemeralStack()):
        from services.api.auth import create_token
        from shared.db.session import session_scope

        with session_scope(stack.database_url) as session:
            token = create_token(session, user_name="workload-author", label="test")
        yield GraphQLClient(stack.api_url, token)


def _submit(client: GraphQLClient, **given: Any) -> dict[str, Any]:
    base = {"model": "resnet18", "framework": "null"}
    answer: dict[str, Any] = client(SUBMIT, {"input": {**base, **given}})["submitEvaluation"]
    return answer


def test_a_dropped_in_workload_is_measured_and_stored_with_its_figures(
    client: GraphQLClient, throwaway: str
) -> None:
    created = _submit(client, workload=throwaway, workloadOptions={"repeats": 3})
    assert created["__typename"] == "Evaluation", created
    client.follow(created["id"], timeout_s=120)
    evaluation = client(RESULT, {"id": created["id"]})["evaluation"]
    assert evaluation["state"] == "SUCCEEDED", evaluation
    (run,) = evaluation["runs"]
    assert run["validity"] == "MEASURED"
    assert {"name": "echoed", "value": 3.0, "unit": "count"} in run["metrics"]


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"workloadOptions": {"repeats": 9}}, "workloadOptions.repeats"),
        ({"workloadOptions": {"speed": 1}}, "workloadOptions.speed"),
        ({"workloadOptions": [1]}, "workloadOptions"),
        ({"bricks": {"granularity": 1}}, "{name}"),
    ],
)
def test_its_options_are_checked_by_its_own_model(
    client: GraphQLClient, throwaway: str, given: dict[str, Any], field: str
) -> None:
    refused = _submit(client, workload=throwaway, **given)
    assert refused["__typename"] == "InvalidInput", refused
    assert refused["field"] == field.replace("{name}", throwaway), refused


def test_an_unknown_workload_is_refused_with_the_names_accepted(
    client: GraphQLClient, throwaway: str
) -> None:
    refused = _submit(client, workload="no-such-kind")
    assert refused["__typename"] == "InvalidInput", refused
    assert refused["field"] == "workload"
    assert throwaway in refused["message"] and "bricks" in refused["message"], refused
