"""/readyz's object-store check: one request per interval and one at a time, however
many probes arrive, so a hung S3 cannot pile up calls in the API's blocking threads."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import services.api.app as app_module
from services.api.probes import CHECKING, CachedCheck
from tests.services.api.conftest import Api


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_answer_is_kept_for_its_interval() -> None:
    clock, calls = Clock(), []

    def check() -> str:
        calls.append(clock.now)
        return f"answer {len(calls)}"

    cached = CachedCheck(check, ttl_s=1.5, clock=clock, pending=CHECKING)
    assert [cached() for _ in range(20)] == ["answer 1"] * 20
    clock.now += 1.4
    assert cached() == "answer 1"
    clock.now += 0.2
    assert cached() == "answer 2" and len(calls) == 2


def test_probes_during_a_slow_check_do_not_wait_or_start_another() -> None:
    release, started = threading.Event(), threading.Event()
    calls: list[int] = []

    def hung() -> str:
        calls.append(1)
        started.set()
        release.wait(10)
        return "error: object store unavailable: s3 did not answer in time"

    cached = CachedCheck(hung, ttl_s=0.0, pending=CHECKING)
    with ThreadPoolExecutor(max_workers=13) as pool:
        first = pool.submit(cached)
        assert started.wait(5)
        # Twelve more while the first hangs: each answers at once, none asks S3.
        others = [pool.submit(cached) for _ in range(12)]
        assert [f.result(timeout=1) for f in others] == [CHECKING] * 12
        release.set()
        assert first.result(timeout=5).startswith("error: object store unavailable")
    assert len(calls) == 1


def test_known_answers_from_memory_until_a_check_is_due() -> None:
    clock = Clock()
    cached = CachedCheck(lambda: "ok", ttl_s=1.0, clock=clock, pending=CHECKING)
    assert cached.known() is None  # nothing kept: the caller must check
    assert cached() == "ok"
    assert cached.known() == "ok"  # fresh: no thread, no check
    clock.now += 1.0
    assert cached.known() is None


def test_probes_in_a_loop_are_answered_from_memory(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/readyz in a loop makes one round of checks per interval (readiness_cache_seconds,
    1 s), however many probes come in it."""
    rounds: list[float] = []
    checks = app_module.readiness

    def counted(*args: Any) -> dict[str, str]:
        rounds.append(time.monotonic())
        return checks(*args)

    monkeypatch.setattr(app_module, "readiness", counted)
    started = time.monotonic()
    answers = [api.client.get("/readyz") for _ in range(50)]
    took = time.monotonic() - started
    assert {a.status_code for a in answers} == {200}
    assert len(rounds) <= took / api.settings.readiness_cache_seconds + 1
