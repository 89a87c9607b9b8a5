"""The per-process cache of token owners: bounded in time and size, never holding a token."""

from __future__ import annotations

from services.api.token_cache import Caller, TokenCache


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_entry_is_served_until_its_time_is_up() -> None:
    clock = FakeClock()
    cache = TokenCache(5.0, clock=clock)
    cache.put("bst_secret", Caller(7, "ada"))
    clock.now += 4.9
    assert cache.get("bst_secret") == Caller(7, "ada")
    clock.now += 0.1
    assert cache.get("bst_secret") is None


def test_zero_seconds_caches_nothing() -> None:
    cache = TokenCache(0.0)
    cache.put("bst_secret", Caller(7, "ada"))
    assert cache.get("bst_secret") is None


def test_unknown_tokens_are_misses() -> None:
    cache = TokenCache(5.0)
    cache.put("bst_a", Caller(1, "a"))
    assert cache.get("bst_b") is None


def test_the_oldest_entry_goes_first_when_full() -> None:
    cache = TokenCache(60.0, max_entries=2)
    cache.put("bst_a", Caller(1, "a"))
    cache.put("bst_b", Caller(2, "b"))
    cache.put("bst_c", Caller(3, "c"))
    assert cache.get("bst_a") is None
    assert cache.get("bst_b") == Caller(2, "b")
    assert cache.get("bst_c") == Caller(3, "c")


def test_clear_tokens_are_not_kept() -> None:
    cache = TokenCache(60.0)
    cache.put("bst_very-secret-token", Caller(1, "a"))
    assert "bst_very-secret-token" not in repr(cache._entries)
