"""The mended Redis transport: a worker whose broker goes away with tasks under way
reconnects instead of shutting down (the whole story: tests/integration/test_chaos.py's
Redis restart)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kombu.common import ignore_errors
from redis.connection import SSLConnection

from shared.broker_transport import Channel, Transport
from shared.celery_app import make_celery
from shared.settings import Settings
from tests.support.own_servers import OwnRedis

REDIS = os.environ.get("BENCHSTACK_TEST_REDIS", "redis://127.0.0.1:6379/0")


def _pinged_through_the_mended_transport(broker_url: str) -> type:
    """Pings the broker through the mended transport and channel; returns the class of
    the connections its client makes."""
    app = make_celery(Settings(broker_url=broker_url))
    with app.connection_for_write() as connection:
        assert isinstance(connection.transport, Transport)
        channel = connection.channel()
        assert isinstance(channel, Channel)
        assert channel.client.ping()
        made: type = channel.client.connection_pool.connection_class
        return made


def test_redis_brokers_use_the_mended_transport_and_others_celerys() -> None:
    assert not issubclass(_pinged_through_the_mended_transport(REDIS), SSLConnection)
    memory = make_celery(Settings(broker_url="memory://"))
    with memory.connection_for_write() as connection:
        assert not isinstance(connection.transport, Transport)


def test_a_closed_connection_is_a_connection_error_that_celerys_close_ignores() -> None:
    app = make_celery(Settings(broker_url=REDIS))
    connection = app.connection_for_write()
    channel = connection.channel()
    # What Celery's consumer leaves once the broker is gone: a transport with no client.
    channel.connection.client = None
    with pytest.raises(connection.connection_errors, match="already closed"):
        channel._connparams()
    # Celery closes the broken connection so; kombu's own transport raised AttributeError
    # here, which escaped and shut the worker down.
    ignore_errors(connection, channel._connparams)


@pytest.mark.parametrize("verified", [True, False], ids=["ca-verified", "no-tls-options"])
def test_a_tls_broker_gets_the_mended_transport_and_keeps_its_tls(
    tmp_path: Path, verified: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # The server speaks TLS only, so the ping fails if the transport dropped the TLS
    # options, or, for a bare rediss:// URL, connected without TLS at all (kombu turns
    # TLS on for the scheme only when the transport is its own 'rediss').
    server = OwnRedis(tls_dir=tmp_path)
    server.start()
    url = server.url if verified else f"rediss://127.0.0.1:{server.port}/0"
    try:
        assert issubclass(_pinged_through_the_mended_transport(url), SSLConnection)
    finally:
        server.stop()
    unverified = [r.message for r in caplog.records if "not verified" in r.message]
    assert bool(unverified) != verified, unverified
