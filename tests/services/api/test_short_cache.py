"""Shared reads are computed once per lifetime, again after it, and every time at 0."""

from __future__ import annotations

from pathlib import Path

from services.api.short_cache import ShortCache
from tests.services.api.conftest import api_with


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_value_is_kept_for_its_lifetime_per_key() -> None:
    clock = Clock()
    cache: ShortCache[int] = ShortCache(1.0, clock=clock)
    computed: list[str] = []

    def compute(key: str) -> int:
        computed.append(key)
        return len(computed)

    assert cache.get("a", lambda: compute("a")) == 1
    clock.now += 0.9
    assert cache.get("a", lambda: compute("a")) == 1
    assert cache.get("b", lambda: compute("b")) == 2
    clock.now += 0.2
    assert cache.get("a", lambda: compute("a")) == 3
    assert computed == ["a", "b", "a"]


def test_no_lifetime_computes_every_time_and_the_table_stays_bounded() -> None:
    uncached: ShortCache[int] = ShortCache(0)
    calls = iter(range(10))
    assert [uncached.get("k", lambda: next(calls)) for _ in range(3)] == [0, 1, 2]
    bounded: ShortCache[int] = ShortCache(60, max_keys=4)
    for key in range(50):
        bounded.get(key, lambda: 0)
    assert len(bounded._values) <= 4


def test_the_agents_list_is_shared_for_its_lifetime(tmp_path: Path) -> None:
    query = "{ agents(liveOnly: false) { id } }"
    with api_with(tmp_path, api_shared_reads_cache_seconds=60) as api:
        token = api.token("watcher")
        assert api.data(token, query)["agents"] == []
        api.add_agent("null")
        # Another caller within the lifetime gets the kept list.
        assert api.data(api.token("other"), query)["agents"] == []
        api.client.app.state.deps.shared_reads.ttl_s = 0  # type: ignore[attr-defined]
        assert [a["id"] for a in api.data(token, query)["agents"]] == ["host/inference.null.cpu/1"]
