"""kombu's Redis transport with one mend: asking a channel whose connection is already
closed for its connection parameters raises a connection error, not AttributeError.

When the broker goes away while a worker holds unacknowledged messages (tasks under
way), Celery closes the broken connection inside kombu's ``ignore_errors``, which
swallows connection errors only. Closing restores the unacknowledged messages, which
asks the closed connection for its host (None by then): kombu raised AttributeError,
Celery called it unrecoverable and the worker shut down for good. Every evaluation it
would have planned stayed stuck; tests/integration/test_chaos.py's Redis restart hit
this in about half its runs once the scheduler's tasks got short enough to be acking
as Redis went down. As a connection error it is ignored, the worker reconnects, and the
scheduler's sweep re-dispatches what was in flight, as for any lost message.
"""

from __future__ import annotations

from typing import Any

import redis
from kombu.transport import redis as kombu_redis

# For Celery's broker_transport setting (shared/celery_app.py).
DOTTED_PATH = "shared.broker_transport:Transport"


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        if self.connection is None or self.connection.client is None:
            raise redis.exceptions.ConnectionError("the broker connection is already closed")
        params: dict[str, Any] = super()._connparams(asynchronous=asynchronous)
        return params


class Transport(kombu_redis.Transport):
    Channel = Channel
