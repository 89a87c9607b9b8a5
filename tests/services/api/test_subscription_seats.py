"""A user's subscriptions counted across API processes (services/api/subscription_seats.py),
against a private redis-server: two processes share one cap, a dead process's seats
expire, and without Redis each process counts its own as before."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from services.api.subscription_seats import SubscriptionSeats
from shared.settings import Settings
from tests.services.api.conftest import api_with
from tests.services.api.graphql.evaluations.test_watcher import QUICK, SUBMIT, _first, _subscribe
from tests.support.own_servers import OwnRedis, free_port


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    server = OwnRedis()
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def settings_for(tmp_path: Path, broker_url: str) -> Settings:
    return Settings(data_dir=tmp_path, broker_url=broker_url)


def test_two_processes_share_one_cap(tmp_path: Path, redis_url: str) -> None:
    settings = settings_for(tmp_path, redis_url)
    first, second = SubscriptionSeats(settings), SubscriptionSeats(settings)
    seat = first.take(7, limit=2)
    assert isinstance(seat, str)
    assert isinstance(second.take(7, limit=2), str)
    assert second.take(7, limit=2) is False  # two held, one in each process
    assert isinstance(second.take(8, limit=2), str)  # another user's are their own
    first.give_back(7, seat)
    assert isinstance(second.take(7, limit=2), str)
    # Another deployment (database) on the same Redis counts apart.
    elsewhere = SubscriptionSeats(settings_for(tmp_path / "other", redis_url))
    assert isinstance(elsewhere.take(7, limit=1), str)


def test_a_dead_process_s_seats_expire_and_renewed_ones_do_not(
    tmp_path: Path, redis_url: str
) -> None:
    settings, clock = settings_for(tmp_path, redis_url), Clock()
    dead = SubscriptionSeats(settings, ttl_s=30, clock=clock)
    alive = SubscriptionSeats(settings, ttl_s=30, clock=clock)
    assert isinstance(dead.take(7, limit=2), str)
    kept = alive.take(7, limit=2)
    assert isinstance(kept, str)
    clock.now += 20
    alive.renew([(7, kept)])
    clock.now += 15  # the dead one's seat expired at +30; the renewed one lasts to +50
    assert isinstance(alive.take(7, limit=2), str)
    assert alive.take(7, limit=2) is False


def test_without_redis_each_process_counts_its_own(tmp_path: Path) -> None:
    down = SubscriptionSeats(settings_for(tmp_path, f"redis://127.0.0.1:{free_port()}/0"))
    assert down.take(7, limit=1) is None
    assert SubscriptionSeats(settings_for(tmp_path, "memory://")).take(7, limit=1) is None


def test_a_second_api_process_refuses_past_the_users_cap(tmp_path: Path, redis_url: str) -> None:
    given = {"broker_url": redis_url, "max_subscriptions_per_user": 1}
    with api_with(tmp_path, **given) as one, api_with(tmp_path, **given) as two, ExitStack() as s:
        one.add_agent()
        token = one.token("alice")
        created = one.data(token, SUBMIT, {"input": QUICK})["submitEvaluation"]["id"]
        held = _first(_subscribe(one, s, token, created))
        assert held["payload"]["data"]["evaluationUpdates"]["state"] == "QUEUED", held
        refused = _first(_subscribe(two, s, token, created))
        assert refused["type"] == "error" or refused["payload"].get("errors"), refused
        assert "across the API's processes" in json.dumps(refused), refused
