"""Each caller spends a budget of query cost per second: a loop of costly queries from one
caller is refused with RATE_LIMITED and a time to retry, while another caller's queries
run, and the budget comes back with time."""

from __future__ import annotations

from pathlib import Path

from services.api.cost_budget import RATE_LIMITED, CostBudget
from tests.services.api.conftest import api_with

PAGE = "{ evaluations(first: 200) { items { id modelName runs { id } } } }"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_spends_refills_and_says_how_long_to_wait() -> None:
    clock = Clock()
    budget = CostBudget(rate=100, burst=300, clock=clock)
    assert budget.take("a", 200) == 0.0
    assert budget.take("a", 200) == 1.0  # 100 left: 100 more at 100 a second
    assert budget.take("b", 300) == 0.0  # another caller has its own bucket
    clock.now = 1.0
    assert budget.take("a", 200) == 0.0
    assert budget.take("a", 10_000) == 3.0  # charged as the burst, never unreachable


def test_the_table_of_callers_stays_bounded() -> None:
    budget = CostBudget(rate=1, burst=1, max_callers=100)
    for caller in range(1000):
        budget.take(f"address:{caller}", 1)
    assert len(budget._buckets) == 100


def test_one_caller_looping_is_refused_and_another_still_runs(tmp_path: Path) -> None:
    with api_with(tmp_path, query_cost_per_second=1000, query_cost_burst=20_000) as api:
        looping, other = api.token("looping"), api.token("other")
        codes = []
        for _ in range(40):
            body = api.gql(looping, PAGE).json()
            codes.append((body.get("errors") or [{}])[0].get("extensions", {}).get("code"))
        refused = codes.index(RATE_LIMITED)
        assert 0 < refused < 40 and set(codes[:refused]) == {None}, codes
        error = api.gql(looping, PAGE).json()["errors"][0]
        assert error["extensions"]["retryAfterS"] > 0
        assert "BENCHSTACK_QUERY_COST_PER_SECOND" in error["message"]
        assert api.data(other, PAGE)["evaluations"]["items"] == []
