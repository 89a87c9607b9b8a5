"""Throw-away Postgres and Redis servers on their own ports, for fault tests that stop and
restart them: the shared servers on 5432 and 6379 are never touched.

Postgres runs as the ``postgres`` system user when the tests run as root (the server refuses
to run as root); its data folder lives in a temporary directory removed on close.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_port(port: int, *, up: bool, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            answering = sock.connect_ex(("127.0.0.1", port)) == 0
        if answering == up:
            return
        time.sleep(0.1)
    raise RuntimeError(f"port {port} did not go {'up' if up else 'down'} in {timeout_s:g} s")


@dataclass
class OwnRedis:
    """``redis-server`` without persistence: a restart drops every queued message, as a
    restarted broker without AOF would."""

    port: int = field(default_factory=free_port)
    # Serve TLS only, with a self-signed certificate for 127.0.0.1 made in this folder.
    tls_dir: Path | None = None
    _process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        if self.tls_dir is None:
            return f"redis://127.0.0.1:{self.port}"
        ca = self.tls_dir / "cert.pem"
        return f"rediss://127.0.0.1:{self.port}?ssl_cert_reqs=required&ssl_ca_certs={ca}"

    def _listen(self) -> list[str]:
        if self.tls_dir is None:
            return ["--port", str(self.port)]
        cert, key = self.tls_dir / "cert.pem", self.tls_dir / "key.pem"
        if not cert.exists():
            self_signed = [
                *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
                *("-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"),
                *("-keyout", str(key), "-out", str(cert)),
            ]
            subprocess.run(self_signed, check=True, capture_output=True)
        return [
            *("--port", "0", "--tls-port", str(self.port), "--tls-auth-clients", "no"),
            *("--tls-cert-file", str(cert), "--tls-key-file", str(key)),
            *("--tls-ca-cert-file", str(cert)),
        ]

    def start(self) -> None:
        self._process = subprocess.Popen(
            [
                "redis-server",
                *self._listen(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_port(self.port, up=True)

    def stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None
        _wait_port(self.port, up=False)

    def restart(self) -> None:
        self.stop()
        self.start()


def _postgres_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise RuntimeError(
            f"no {name} under /usr/lib/postgresql/*/bin (apt-get install postgresql)"
        )
    return found[-1]


@dataclass
class OwnPostgres:
    port: int = field(default_factory=free_port)
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="benchstack-pg-")))

    @property
    def admin_url(self) -> str:
        return f"postgresql+psycopg2://postgres@127.0.0.1:{self.port}/postgres"

    def _as_postgres(self, argv: list[str]) -> None:
        if os.geteuid() == 0:
            argv = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(argv)]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def init(self) -> None:
        data = self.folder / "data"
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self._as_postgres(
            [
                _postgres_bin("initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
            ]
        )
        self.start()

    def start(self) -> None:
        options = f"'-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off'"
        self._as_postgres(
            [
                _postgres_bin("pg_ctl"),
                "-D",
                str(self.folder / "data"),
                "-o",
                options,
                "-l",
                str(self.folder / "log"),
                "-w",
                "start",
            ]
        )
        _wait_port(self.port, up=True)

    def stop(self) -> None:
        self._as_postgres(
            [
                _postgres_bin("pg_ctl"),
                "-D",
                str(self.folder / "data"),
                "-m",
                "immediate",
                "-w",
                "stop",
            ]
        )
        _wait_port(self.port, up=False)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


@contextmanager
def stopped(server: OwnRedis) -> Iterator[None]:
    """The server's process stopped (SIGSTOP), as a hung server is: the kernel still
    accepts connections, nothing answers. Continued (SIGCONT) whatever happens."""
    assert server._process is not None
    pid = server._process.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@contextmanager
def stopped_postgres(server: OwnPostgres) -> Iterator[None]:
    """The whole server stopped (SIGSTOP): the postmaster, which a new connection meets,
    and every backend already serving a connection (a stopped postmaster alone lets them
    answer). Continued (SIGCONT) whatever happens."""
    main = int((server.folder / "data" / "postmaster.pid").read_text().split()[0])
    listed = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(main)], capture_output=True, text=True, check=True
    )
    pids = [main, *(int(pid) for pid in listed.stdout.split())]
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


def outcome_within(call: Callable[[], object], limit_s: float) -> BaseException | None:
    """What ``call()`` raised (None if it returned), failing the test if it is still
    running after ``limit_s`` (the old code hung: a join with a timeout, not a hang)."""
    result: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            result.append(None)
        except BaseException as exc:  # handed to the test
            result.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(limit_s)
    assert not worker.is_alive(), f"still waiting after {limit_s:g} s"
    return result[0]
