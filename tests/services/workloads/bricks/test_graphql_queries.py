"""constructedLatency, the bricks workload's own query: a model's latency on each system
with a floor, constructed from the stored brick timings; a brick the system lacks is
named, never guessed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from services.workloads.bricks.store import save_measured, save_recipe
from shared.db.session import session_scope
from tests.services.api.conftest import Api, api_with

QUERY = """
query($model: String!) {
  constructedLatency(model: $model) {
    model system granularity inputShape layers bricks uniqueBricks missing
    sequentialMs criticalPathMs floorCorrectedMs
  }
}
"""
RECIPE = {
    "model": "chain",
    "granularity": 1,
    "input_shape": [1, 3, 32, 32],
    "layers": 3,
    # s1 then s2 read the input; s1 again reads both: the critical path is 1 + 4.
    "steps": [
        {"signature": "s1", "reads": []},
        {"signature": "s2", "reads": []},
        {"signature": "s1", "reads": [0, 1]},
    ],
}


def timing(median_ms: float) -> dict[str, float]:
    return {"median_ms": median_ms, "mean_ms": median_ms, "p90_ms": median_ms, "queries": 5}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with api_with(tmp_path) as made:
        yield made


def test_each_system_gets_its_construction_and_a_missing_brick_is_named(api: Api) -> None:
    with session_scope(api.settings.effective_database_url) as session:
        save_recipe(session, RECIPE)
        bricks = {"s1": timing(1.0), "s2": timing(4.0)}
        save_measured(session, "full", bricks, {"median_ms": 0.25}, None)
        save_measured(session, "half", {"s1": timing(2.0)}, {"median_ms": 0.5}, None)
    answers = api.data(api.token("alice"), QUERY, {"model": "chain"})["constructedLatency"]
    by_system = {answer["system"]: answer for answer in answers}
    assert by_system["full"] == {
        "model": "chain",
        "system": "full",
        "granularity": 1,
        "inputShape": [1, 3, 32, 32],
        "layers": 3,
        "bricks": 3,
        "uniqueBricks": 2,
        "missing": [],
        "sequentialMs": 6.0,
        "criticalPathMs": 5.0,
        "floorCorrectedMs": 5.5,  # each brick but one less the floor
    }
    assert by_system["half"]["missing"] == ["s2"]
    assert by_system["half"]["sequentialMs"] is None
