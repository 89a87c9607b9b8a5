"""A real S3 server on loopback for the object-store tests: moto's, in this process (no
MinIO installs here; the minio client speaks plain S3 to it), one that can be stopped and
started again on its port, and a server that accepts connections and never answers."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.ephemeral import free_port


class MotoS3:
    """moto's S3 server on a free loopback port. Its buckets live in this process, so
    ``stop()`` then ``start()`` is an S3 restarted with its data, as MinIO's is."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        # One access-log line per request would drown the test output.
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        self.port = free_port()
        self.endpoint = f"127.0.0.1:{self.port}"
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self.running = False

    def start(self) -> None:
        self._server.start()
        self.running = True

    def stop(self) -> None:
        self._server.stop()
        self.running = False


@contextmanager
def moto_s3_server() -> Iterator[MotoS3]:
    server = MotoS3()
    server.start()
    try:
        yield server
    finally:
        if server.running:
            server.stop()


@contextmanager
def moto_s3() -> Iterator[str]:
    """Serve S3 for the duration; yields its endpoint, host:port."""
    with moto_s3_server() as server:
        yield server.endpoint


@contextmanager
def silent_server() -> Iterator[str]:
    """A loopback port that accepts connections, reads nothing and answers nothing: a hung
    S3. Yields its endpoint, host:port."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    listener.settimeout(0.1)
    accepted: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            accepted.append(connection)

    thread = threading.Thread(target=accept, name="silent-s3", daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{listener.getsockname()[1]}"
    finally:
        done.set()
        thread.join(timeout=5)
        listener.close()
        for connection in accepted:
            connection.close()
