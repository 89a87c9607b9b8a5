"""A real S3 server on loopback for the object-store tests: moto's, in this process (no
MinIO installs here; the minio client speaks plain S3 to it)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.ephemeral import free_port


@contextmanager
def moto_s3() -> Iterator[str]:
    """Serve S3 for the duration; yields its endpoint, host:port."""
    from moto.server import ThreadedMotoServer

    # One access-log line per request would drown the test output.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop()
