"""MLPerf's accuracy + performance pair through the service: two evaluations of the same
settings, one per mode, on one agent; the pair reads back the accuracy pass's top-1 and the
performance pass's figures with their verdicts."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.integration.conftest import GraphQLClient

pytestmark = pytest.mark.integration

SUBMIT = """
mutation($input: SubmitEvaluationInput!) {
  submitAccuracyPerformancePair(input: $input) {
    __typename
    ... on AccuracyPerformancePair { groupId state accuracy { evaluation { id scenario } } }
    ... on UserError { message field }
  }
}
"""
PAIR = """
query($id: String!) {
  accuracyPerformancePair(groupId: $id) {
    state sameAgent top1 top5 accuracySamples samplesPerSecond validity stability
    accuracy { evaluation { state reason scenario agentId } run { mode } }
    performance { evaluation { state reason scenario agentId } run { mode validity } }
  }
}
"""
BASE = {
    "model": "resnet18",
    "framework": "null",
    "scenario": "offline",
    "settings": {"minDurationS": 0.3, "targetQps": 2000},
    "samples": 16,
    "seed": 717,
}


def wait_done(client: GraphQLClient, group_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 240
    while True:
        found: dict[str, Any] = client(PAIR, {"id": group_id})["accuracyPerformancePair"]
        if found["state"] != "running":
            return found
        assert time.monotonic() < deadline, found
        time.sleep(0.5)


def test_the_pair_runs_both_passes_on_one_agent_through_the_service(
    client_for: Callable[[str], GraphQLClient],
) -> None:
    mia = client_for("mia-pair")
    created = mia(SUBMIT, {"input": BASE})["submitAccuracyPerformancePair"]
    assert created["__typename"] == "AccuracyPerformancePair", created
    assert created["accuracy"]["evaluation"]["scenario"]["mode"] == "accuracy"
    found = wait_done(mia, created["groupId"])
    assert found["state"] == "done", found
    assert found["sameAgent"] is True
    assert found["accuracy"]["run"]["mode"] == "accuracy"
    assert found["performance"]["run"]["mode"] == "performance"
    assert found["performance"]["evaluation"]["scenario"]["mode"] == "performance"
    # Every synthetic sample is scored; the null backend's output is a constant class.
    assert found["accuracySamples"] == 16 and 0 <= found["top1"] <= 100
    assert found["samplesPerSecond"] > 0
    assert found["validity"] == found["performance"]["run"]["validity"]
    assert (
        client_for("nils-pair")(PAIR, {"id": created["groupId"]})["accuracyPerformancePair"] is None
    )


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({**BASE, "settings": {"mode": "accuracy"}}, "settings.mode"),
        ({**BASE, "fanOut": True}, "evaluation"),
    ],
)
def test_a_pair_that_cannot_run_is_refused_naming_the_field(
    client_for: Callable[[str], GraphQLClient], given: dict[str, Any], field: str
) -> None:
    refused = client_for("otto-pair")(SUBMIT, {"input": given})["submitAccuracyPerformancePair"]
    assert refused["__typename"] == "InvalidInput", refused
    assert refused["field"] == field
