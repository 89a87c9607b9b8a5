"""Repeats through the service: submitRepeats stores one evaluation COUNT times in one
group, and repeats(groupId) gives each run with every figure's spread and its 95 %
interval over the runs, once enough of them are VALID."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.integration.conftest import GraphQLClient

pytestmark = pytest.mark.integration

SUBMIT = """
mutation($input: SubmitRepeatsInput!) {
  submitRepeats(input: $input) {
    __typename
    ... on Repeats { groupId count repeats { index evaluation { id state } } }
    ... on UserError { message field }
  }
}
"""
REPEATS = """
query($id: String!) {
  repeats(groupId: $id) {
    count agents
    repeats { index evaluation { state reason } run { id samplesPerSecond validity } }
    spread { name unit count min median max cv }
    confidence { basis units samplesPerSecond { estimate low high reason } }
  }
}
"""
BASE = {
    "model": "resnet18",
    "framework": "null",
    "scenario": "offline",
    "settings": {"minDurationS": 0.3, "targetQps": 2000},
    "samples": 16,
    "seed": 616,
    "backendOptions": {"service_time_ms": 0.25},
}


def wait_done(client: GraphQLClient, group_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 240
    while True:
        found: dict[str, Any] = client(REPEATS, {"id": group_id})["repeats"]
        states = [r["evaluation"]["state"] for r in found["repeats"]]
        if all(s in {"SUCCEEDED", "FAILED", "CANCELLED"} for s in states):
            return found
        assert time.monotonic() < deadline, found
        time.sleep(0.5)


def test_repeats_run_through_the_service_with_their_spread_and_intervals(
    client_for: Callable[[str], GraphQLClient],
) -> None:
    judy = client_for("judy-repeats")
    created = judy(SUBMIT, {"input": {"evaluation": BASE, "count": 3}})["submitRepeats"]
    assert created["__typename"] == "Repeats", created
    assert created["count"] == 3 and [r["index"] for r in created["repeats"]] == [0, 1, 2]
    found = wait_done(judy, created["groupId"])
    assert [r["evaluation"]["state"] for r in found["repeats"]] == ["SUCCEEDED"] * 3, found
    rates = [r["run"]["samplesPerSecond"] for r in found["repeats"]]
    assert len(found["agents"]) == 1
    spread = {s["name"]: s for s in found["spread"]}
    throughput = spread["samples_per_second"]
    assert throughput["count"] == 3 and throughput["unit"] == "samples/s"
    assert throughput["min"] == min(rates) and throughput["max"] == max(rates)
    assert throughput["cv"] is not None and throughput["cv"] >= 0
    confidence = found["confidence"]
    assert confidence["basis"] == "runs"
    # Three runs are too few for an interval over runs (it needs five): the reason says so.
    assert confidence["units"] == 0
    interval = confidence["samplesPerSecond"]
    assert interval["low"] is None and "needs 5" in interval["reason"], interval
    assert client_for("karl-repeats")(REPEATS, {"id": created["groupId"]})["repeats"] is None


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"evaluation": BASE, "count": 1}, "count"),
        ({"evaluation": BASE, "count": 21}, "count"),
        ({"evaluation": {**BASE, "fanOut": True}, "count": 2}, "evaluation"),
    ],
)
def test_repeats_out_of_range_are_refused_naming_the_field(
    client_for: Callable[[str], GraphQLClient], given: dict[str, Any], field: str
) -> None:
    refused = client_for("lena-repeats")(SUBMIT, {"input": given})["submitRepeats"]
    assert refused["__typename"] == "InvalidInput", refused
    assert refused["field"] == field
