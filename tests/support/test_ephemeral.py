"""Two ephemeral stacks alive at once never share a Redis database (the integration
suite's session stack stays up while other modules start theirs)."""

from __future__ import annotations

import socket
import subprocess
import sys

import psutil
import redis

from tests.support import ephemeral
from tests.support.ephemeral import EphemeralStack


def test_stacks_alive_together_get_their_own_redis_database_and_give_it_back() -> None:
    first, second = EphemeralStack(), EphemeralStack()
    try:
        assert first.broker_url != second.broker_url
        held = second.broker_url
    finally:
        first.close()
        second.close()
    third = EphemeralStack()
    try:
        # The lowest free index again: closing released both.
        assert third.broker_url == first.broker_url != held
    finally:
        third.close()


def _claimed_index(stack: EphemeralStack) -> int | None:
    stack.broker_url  # noqa: B018 - reading it claims the database
    return stack.redis_db


def test_a_database_another_live_process_holds_is_skipped_and_a_dead_ones_is_taken() -> None:
    """A benchmark's stack beside a test run's: two processes, each with its own set."""
    probe = EphemeralStack()
    lowest = _claimed_index(probe)
    probe.close()
    client = redis.Redis.from_url(f"{probe.redis_base.rstrip('/')}/{lowest}")
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = psutil.Process(holder.pid).create_time()
        client.set(ephemeral.OWNER_KEY, f"{socket.gethostname()}|{holder.pid}|{started:.2f}")
        # Connected, this client would keep the index in use (see the next test).
        client.connection_pool.disconnect()
        stack = EphemeralStack()
        try:
            assert _claimed_index(stack) != lowest  # held by a live process of this host
        finally:
            stack.close()
        holder.kill()
        holder.wait()
        client.connection_pool.disconnect()
        stack = EphemeralStack()
        try:
            assert _claimed_index(stack) == lowest  # its holder is gone: the claim is stale
        finally:
            stack.close()
        assert client.get(ephemeral.OWNER_KEY) is None  # closing gave it back
    finally:
        holder.kill()
        client.delete(ephemeral.OWNER_KEY)
        client.close()


def test_a_database_a_leftover_service_still_consumes_is_skipped() -> None:
    """Services whose stack's process died hold no claim but still consume the queues:
    measured, such a leftover scheduler on index 11 took a benchmark's messages."""
    probe = EphemeralStack()
    lowest = _claimed_index(probe)
    probe.close()
    leftover = redis.Redis.from_url(f"{probe.redis_base.rstrip('/')}/{lowest}")
    leftover.ping()  # connected to that index, as an orphaned worker is
    try:
        stack = EphemeralStack()
        try:
            assert _claimed_index(stack) != lowest
        finally:
            stack.close()
    finally:
        leftover.close()
    stack = EphemeralStack()
    try:
        assert _claimed_index(stack) == lowest  # nobody there any more
    finally:
        stack.close()
