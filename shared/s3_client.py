"""The minio client's HTTP side, bounded: timeouts, retries with backoff, short causes.

minio's own default waits 5 minutes to connect and 5 minutes per read, and retries 5
times: a hung S3 held a caller for most of an hour. Here every request is bounded by
the ``s3_*`` settings (``worst_case_seconds``), and what a failed request raised (a
``MaxRetryError`` with a page of urllib3 text) is told in a few words (``cause_of``).
"""

from __future__ import annotations

import errno
import os
import socket
from dataclasses import dataclass

import certifi
import urllib3
from minio.error import ServerError
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    MaxRetryError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    ResponseError,
)
from urllib3.util import Retry, Timeout

from shared.settings import Settings

# The longest pause between two retries of one request.
BACKOFF_MAX_SECONDS = 8.0
# The answers worth asking again: the server is restarting or overloaded.
RETRY_STATUSES = (500, 502, 503, 504)
# What a request raises when the server is down, hangs or keeps failing: transport
# errors (urllib3's, MaxRetryError included) and minio's ServerError (a 5xx without an
# S3 error body).
TRANSPORT_ERRORS: tuple[type[Exception], ...] = (HTTPError, ServerError, OSError)


@dataclass(frozen=True)
class S3Bounds:
    """How long one request may take, and how often it is tried."""

    connect_s: float
    read_s: float
    retries: int
    backoff_s: float

    @classmethod
    def from_settings(cls, settings: Settings) -> S3Bounds:
        return cls(
            connect_s=settings.s3_connect_timeout_seconds,
            read_s=settings.s3_read_timeout_seconds,
            retries=settings.s3_retries,
            backoff_s=settings.s3_backoff_seconds,
        )

    @classmethod
    def probe(cls, settings: Settings) -> S3Bounds:
        """One quick try, for /readyz: a probe that waits tells nobody anything."""
        timeout = settings.s3_probe_timeout_seconds
        return cls(connect_s=timeout, read_s=timeout, retries=0, backoff_s=0.0)

    @property
    def read_retries(self) -> int:
        return min(self.retries, 1)

    def backoffs(self) -> list[float]:
        """urllib3's pauses before each retry: none before the first, then doubling."""
        return [
            0.0 if n == 1 else min(BACKOFF_MAX_SECONDS, self.backoff_s * 2 ** (n - 1))
            for n in range(1, self.retries + 1)
        ]

    def worst_case_seconds(self) -> float:
        """The longest one request can take before it raises: every try connecting until
        the connect timeout, the read retries waiting out the read timeout, and the
        pauses between them (transfer time of a large object aside, which the read
        timeout bounds per read, not in total)."""
        tries = self.retries + 1
        return tries * self.connect_s + (self.read_retries + 1) * self.read_s + sum(self.backoffs())

    def retry(self) -> Retry:
        return Retry(
            total=self.retries,
            connect=self.retries,
            read=self.read_retries,
            status=self.retries,
            other=self.retries,
            backoff_factor=self.backoff_s,
            backoff_max=BACKOFF_MAX_SECONDS,
            status_forcelist=RETRY_STATUSES,
            # A Retry-After of an hour would be obeyed: the bound is ours, not the server's.
            respect_retry_after_header=False,
            raise_on_status=True,
        )


def http_client(bounds: S3Bounds, *, cert_check: bool = True) -> urllib3.PoolManager:
    """A PoolManager for ``minio.Minio(http_client=...)``: minio's, with our bounds."""
    return urllib3.PoolManager(
        timeout=Timeout(connect=bounds.connect_s, read=bounds.read_s),
        maxsize=10,
        cert_reqs="CERT_REQUIRED" if cert_check else "CERT_NONE",
        ca_certs=os.environ.get("SSL_CERT_FILE") or certifi.where(),
        retries=bounds.retry(),
    )


def cause_of(exc: BaseException, endpoint: str) -> str:
    """A few words on why a request to ``endpoint`` failed, for logs and reasons."""
    if isinstance(exc, MaxRetryError) and exc.reason is not None:
        return cause_of(exc.reason, endpoint)
    # Before ConnectTimeoutError: urllib3 makes NewConnectionError a subclass of it.
    if isinstance(exc, NewConnectionError):
        return f"cannot connect to {endpoint}: {_socket_cause(exc)}"
    if isinstance(exc, ConnectTimeoutError):
        return f"connecting to {endpoint} timed out"
    if isinstance(exc, ReadTimeoutError):
        return f"{endpoint} did not answer in time"
    if isinstance(exc, ProtocolError):
        return f"the connection to {endpoint} broke"
    if isinstance(exc, ResponseError):
        return f"{endpoint} kept answering with server errors"
    if isinstance(exc, ServerError):
        return f"{endpoint} answered HTTP {exc.status_code}"
    if isinstance(exc, TimeoutError | socket.timeout):
        return f"{endpoint} did not answer in time"
    if isinstance(exc, OSError):
        return f"cannot reach {endpoint}: {exc.strerror or exc.__class__.__name__}"
    return f"{endpoint}: {exc.__class__.__name__}"


def _socket_cause(exc: NewConnectionError) -> str:
    underlying = exc.__cause__ or exc.__context__
    if isinstance(underlying, socket.gaierror):
        return "host not found"
    if isinstance(underlying, OSError) and underlying.errno is not None:
        if underlying.errno == errno.ECONNREFUSED:
            return "connection refused"
        return os.strerror(underlying.errno).lower()
    return "no connection"
