"""Data-parallel training across agents: submitTrainingScaling runs, for each world size N,
N ranks on N torch agents that meet at a rendezvous in the object store and train one
model together with DistributedDataParallel (gloo); trainingScaling(groupId) gives each
size's throughput, speedup and efficiency, and whether the ranks' weights agree."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from services.stack.manager import ENTRY_MODULE, ServiceSpec
from tests.integration.conftest import GraphQLClient
from tests.support.ephemeral import EphemeralStack

pytestmark = pytest.mark.integration

SUBMIT = """
mutation($input: SubmitTrainingScalingInput!) {
  submitTrainingScaling(input: $input) {
    __typename
    ... on TrainingScaling { groupId worldSizes state points { worldSize ranks { rank } } }
    ... on UserError { message field }
  }
}
"""
SCALING = """
query($id: String!) {
  trainingScaling(groupId: $id) {
    worldSizes state stopped
    points {
      worldSize state imagesPerSecond standardError speedup efficiency weightsAgree
      ranks { rank runId imagesPerSecond evaluation { state reason agentId } }
    }
  }
}
"""
TRAINING = {"steps": 3, "warmup": 1, "imageSize": 32}
BASE = {"model": "resnet18", "framework": "torch", "batchSize": 4, "training": TRAINING}


def _torch_agents(client: GraphQLClient) -> list[str]:
    agents = client("{ agents { id framework } }")["agents"]
    return sorted(a["id"] for a in agents if a["framework"] == "torch")


@pytest.fixture(scope="module")
def two_torch_agents(
    torch_stack: EphemeralStack, torch_client: GraphQLClient
) -> Iterator[GraphQLClient]:
    """The torch stack's agent and a second torch inference worker beside it."""
    argv = [sys.executable, "-m", ENTRY_MODULE, "worker", "inference", "--framework", "torch"]
    second = torch_stack.start_services([ServiceSpec("inference-torch-2", argv)], name="second")
    try:
        deadline = time.monotonic() + 90
        while len(_torch_agents(torch_client)) < 2:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the second torch worker did not register:\n{torch_stack.logs()}"
                )
            time.sleep(0.3)
        yield torch_client
    finally:
        second.stop(grace_s=10)


def wait_done(client: GraphQLClient, group_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 300
    while True:
        found: dict[str, Any] = client(SCALING, {"id": group_id})["trainingScaling"]
        if found["state"] != "running":
            return found
        assert time.monotonic() < deadline, found
        time.sleep(1.0)


def test_one_then_two_agents_train_together_and_report_speedup_and_efficiency(
    two_torch_agents: GraphQLClient,
) -> None:
    client = two_torch_agents
    given = {"evaluation": BASE, "worldSizes": [2, 1]}
    created = client(SUBMIT, {"input": given})["submitTrainingScaling"]
    assert created["__typename"] == "TrainingScaling", created
    # The smallest size first; the next gang is submitted once it is stored.
    assert created["worldSizes"] == [1, 2]
    assert [p["worldSize"] for p in created["points"]] == [1]
    found = wait_done(client, created["groupId"])
    assert found["state"] == "done", found
    one, two = found["points"]
    assert (one["worldSize"], two["worldSize"]) == (1, 2)
    assert [r["rank"] for r in two["ranks"]] == [0, 1]
    agents = {r["evaluation"]["agentId"] for r in two["ranks"]}
    assert len(agents) == 2 and None not in agents, two  # two agents trained together
    for point in (one, two):
        assert point["state"] == "SUCCEEDED", point
        assert point["imagesPerSecond"] > 0 and point["standardError"] >= 0
        assert point["weightsAgree"] is True, point  # the all-reduce kept them in step
    assert one["speedup"] == pytest.approx(1.0) and one["efficiency"] == pytest.approx(1.0)
    assert two["speedup"] == pytest.approx(two["imagesPerSecond"] / one["imagesPerSecond"])
    assert two["efficiency"] == pytest.approx(two["speedup"] / 2)


@pytest.mark.parametrize(
    ("given", "kind", "field"),
    [
        ({"evaluation": BASE, "worldSizes": [3]}, "NoMatchingAgent", "worldSizes"),
        # The first gang fits; the last could never run: refused now, not half-way.
        ({"evaluation": BASE, "worldSizes": [1, 3]}, "NoMatchingAgent", "worldSizes"),
        ({"evaluation": BASE, "worldSizes": [0]}, "InvalidInput", "worldSizes"),
        ({"evaluation": BASE, "worldSizes": [1, 1]}, "InvalidInput", "worldSizes"),
        (
            {"evaluation": {**BASE, "training": None}, "worldSizes": [1]},
            "InvalidInput",
            "evaluation",
        ),
    ],
)
def test_a_scaling_that_cannot_run_is_refused_naming_the_field(
    two_torch_agents: GraphQLClient, given: dict[str, Any], kind: str, field: str
) -> None:
    refused = two_torch_agents(SUBMIT, {"input": given})["submitTrainingScaling"]
    assert refused["__typename"] == kind, refused
    assert refused["field"] == field
    if kind == "NoMatchingAgent":
        assert "accepted now are 1..2" in refused["message"], refused
