"""/readyz's object-store check: one request per interval and one at a time, however
many probes arrive, so a hung S3 cannot pile up calls in the API's blocking threads."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from services.api.probes import CHECKING, CachedCheck, Readiness
from tests.services.api.conftest import Api, api_with
from tests.support.own_servers import OwnRedis, outcome_within, stopped


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
    checks = Readiness.__call__

    def counted(self: Readiness) -> dict[str, str]:
        rounds.append(time.monotonic())
        return checks(self)

    monkeypatch.setattr(Readiness, "__call__", counted)
    started = time.monotonic()
    answers = [api.client.get("/readyz") for _ in range(50)]
    took = time.monotonic() - started
    assert {a.status_code for a in answers} == {200}
    assert len(rounds) <= took / api.settings.readiness_cache_seconds + 1
    assert rounds, "no round of checks ran"


def test_a_stopped_broker_is_named_within_the_check_timeout(tmp_path: Path) -> None:
    """A Redis of this test's own stopped with SIGSTOP: /readyz answers 503 within its
    check timeout (here 1 s; the broker's socket timeout, 3 s, is longer), naming the
    broker; the old sequential checks waited for the broker as long as it was stopped."""
    redis = OwnRedis()
    redis.start()
    bounds = {"readiness_cache_seconds": 0.0, "readiness_check_timeout_seconds": 1.0}
    try:
        with api_with(tmp_path, broker_url=redis.url, **bounds) as api:
            assert api.client.get("/readyz").json()["broker"] == "ok"
            answers: list[Any] = []
            with stopped(redis):
                for _ in range(2):
                    raised = outcome_within(
                        lambda: answers.append(api.client.get("/readyz")), limit_s=3.0
                    )
                    assert raised is None, raised
            first, second = answers
            assert first.status_code == 503
            assert first.json()["broker"] == "error: broker check timed out after 1 s"
            assert first.json()["database"] == "ok"
            # The first check is still waiting on its socket: no second one is started.
            assert second.json()["broker"].startswith("error: broker check still running")
            deadline = time.monotonic() + 10
            while api.client.get("/readyz").json()["broker"] != "ok":
                assert time.monotonic() < deadline, "the broker check did not recover"
                time.sleep(0.2)
    finally:
        redis.stop()
