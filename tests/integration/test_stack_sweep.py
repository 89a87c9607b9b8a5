"""A sweep through the service: submitSweep stores one evaluation per value in one group,
the worker runs them on one loaded model, and sweep(groupId) gives the curve in value
order with each point's figures, verdicts and whether its model was kept loaded."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner

from services.cli.main import app
from tests.integration.conftest import GraphQLClient

pytestmark = pytest.mark.integration

SUBMIT_SWEEP = """
mutation($input: SubmitSweepInput!) {
  submitSweep(input: $input) {
    __typename
    ... on Sweep { groupId parameter points { value evaluation { id batchSize } } }
    ... on UserError { message field }
  }
}
"""
SWEEP = """
query($id: String!) {
  sweep(groupId: $id) {
    parameter modelLoads
    points {
      value evaluation { state reason batchSize }
      samplesPerSecond latencyP90Ms validity stability modelKept
    }
  }
}
"""
# The null backend with options no other test uses: the sweep's first point loads the model.
BASE = {
    "model": "resnet18",
    "framework": "null",
    "scenario": "offline",
    "settings": {"minDurationS": 0.2, "targetQps": 2000},
    "samples": 16,
    "seed": 909,
    "backendOptions": {"service_time_ms": 0.125},
}


def wait_done(client: GraphQLClient, group_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 240
    while True:
        sweep: dict[str, Any] = client(SWEEP, {"id": group_id})["sweep"]
        states = [p["evaluation"]["state"] for p in sweep["points"]]
        if all(s in {"SUCCEEDED", "FAILED", "CANCELLED"} for s in states):
            return sweep
        assert time.monotonic() < deadline, sweep
        time.sleep(0.5)


def test_a_sweep_over_four_batch_sizes_runs_through_the_service_and_loads_once(
    client_for: Callable[[str], GraphQLClient],
) -> None:
    dora = client_for("dora-sweep")
    given = {"evaluation": BASE, "parameter": "batch_size", "values": [8, 1, 4, 2]}
    created = dora(SUBMIT_SWEEP, {"input": given})["submitSweep"]
    assert created["__typename"] == "Sweep", created
    assert [p["value"] for p in created["points"]] == [1, 2, 4, 8]
    assert [p["evaluation"]["batchSize"] for p in created["points"]] == [1, 2, 4, 8]
    sweep = wait_done(dora, created["groupId"])
    assert sweep["parameter"] == "batch_size"
    assert [p["evaluation"]["state"] for p in sweep["points"]] == ["SUCCEEDED"] * 4, sweep
    assert all(p["samplesPerSecond"] > 0 and p["validity"] for p in sweep["points"])
    # One agent ran the four points on one loaded model.
    assert sweep["modelLoads"] == 1
    assert sorted(p["modelKept"] for p in sweep["points"]) == [False, True, True, True]
    # Another user sees no such sweep.
    assert client_for("eve-sweep")(SWEEP, {"id": created["groupId"]})["sweep"] is None


@pytest.mark.parametrize(
    ("parameter", "values", "field"),
    [
        ("warp", [1, 2], "parameter"),
        ("target_qps", [10, 20], "parameter"),  # an offline evaluation has no target QPS
        ("batch_size", [1, 1], "values"),
        ("batch_size", [0.5], "values"),
        ("batch_size", list(range(1, 18)), "values"),
    ],
)
def test_a_sweep_out_of_range_is_refused_naming_the_field(
    client_for: Callable[[str], GraphQLClient], parameter: str, values: list[float], field: str
) -> None:
    given = {"evaluation": BASE, "parameter": parameter, "values": values}
    refused = client_for("frank-sweep")(SUBMIT_SWEEP, {"input": given})["submitSweep"]
    assert refused["__typename"] == "InvalidInput", refused
    assert refused["field"] == field


CANCEL_GROUP = """
mutation($id: String!) {
  cancelGroup(groupId: $id) {
    __typename
    ... on GroupCancelled { groupId cancelled alreadyFinished }
    ... on UserError { message field }
  }
}
"""


def test_a_sweep_is_cancelled_whole(client_for: Callable[[str], GraphQLClient]) -> None:
    """Six points of 3 s each: cancelled at once, every point ends CANCELLED (or had ended),
    long before they could all have run; another user cannot cancel it."""
    owner = client_for("gus-sweep-cancel")
    slow = {**BASE, "settings": {"minDurationS": 3.0, "targetQps": 2000}, "seed": 913}
    given = {"evaluation": slow, "parameter": "batch_size", "values": [1, 2, 3, 4, 5, 6]}
    created = owner(SUBMIT_SWEEP, {"input": given})["submitSweep"]
    assert created["__typename"] == "Sweep", created
    group_id = created["groupId"]
    refused = client_for("eve-sweep-cancel")(CANCEL_GROUP, {"id": group_id})["cancelGroup"]
    assert refused["__typename"] == "NotFound" and refused["field"] == "groupId", refused
    started = time.monotonic()
    # As a user types it: `benchstack cancel --group GROUP`.
    argv = ["cancel", "--group", group_id, "--server", owner.base_url, "--token", owner.token]
    said = CliRunner().invoke(app, argv)
    assert said.exit_code == 0, said.output
    cancelled, had_ended = (
        int(part.split()[0]) for part in said.stdout.split(": ", 1)[1].split(", ")
    )
    assert cancelled + had_ended == 6 and cancelled >= 5, said.stdout
    sweep = wait_done(owner, group_id)
    took = time.monotonic() - started
    states = [p["evaluation"]["state"] for p in sweep["points"]]
    assert states.count("CANCELLED") >= 5, sweep
    assert took < 6 * 3.0, took
