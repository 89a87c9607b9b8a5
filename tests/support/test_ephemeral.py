"""Two ephemeral stacks alive at once never share a Redis database (the integration
suite's session stack stays up while other modules start theirs)."""

from __future__ import annotations

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
