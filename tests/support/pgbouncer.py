"""A PgBouncer in transaction mode in front of the test Postgres, as docs/scale.md puts one
in front of many agents: a real pooler (Debian's ``pgbouncer``; scripts/test.sh installs
it), on a free loopback port, with its own folder, stopped and removed on close."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from tests.support.ephemeral import free_port

BINARY = "/usr/sbin/pgbouncer"
START_TIMEOUT_S = 20.0


class NoPgBouncer(RuntimeError):
    """The pgbouncer binary is not installed here."""


@dataclass(frozen=True)
class Bouncer:
    port: int
    server_pool_size: int  # server connections per database and user, at most

    def url(self, database: str, user: str = "postgres") -> str:
        return f"postgresql+psycopg2://{user}@127.0.0.1:{self.port}/{database}"


def _config(folder: Path, port: int, server: tuple[str, int], pool_size: int) -> str:
    host, server_port = server
    # It refuses to run as root: as root it is told to drop to the server's own user.
    user_line = "user = postgres\n" if os.geteuid() == 0 else ""
    return f"""[databases]
* = host={host} port={server_port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
{user_line}auth_type = trust
auth_file = {folder}/userlist.txt
pool_mode = transaction
default_pool_size = {pool_size}
max_client_conn = 1000
; psycopg2 sends none of these, but a libpq option in a URL would be refused otherwise
ignore_startup_parameters = extra_float_digits,options
logfile = {folder}/pgbouncer.log
pidfile = {folder}/pgbouncer.pid
"""


@contextmanager
def pgbouncer(admin_url: str, *, pool_size: int = 4) -> Iterator[Bouncer]:
    """A running PgBouncer in front of the server ``admin_url`` names (trust auth, as the
    test server has)."""
    if not os.path.exists(BINARY):
        raise NoPgBouncer(f"{BINARY} not found; apt-get install -y pgbouncer")
    parts = urlsplit(admin_url.replace("postgresql+psycopg2", "postgresql"))
    folder = Path(tempfile.mkdtemp(prefix="benchstack-pgbouncer-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")  # where the dropped user writes its log
    port = free_port()
    (folder / "userlist.txt").write_text('"postgres" ""\n')
    ini = folder / "pgbouncer.ini"
    ini.write_text(
        _config(folder, port, (parts.hostname or "127.0.0.1", parts.port or 5432), pool_size)
    )
    process = subprocess.Popen(
        [BINARY, str(ini)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        _wait_listening(port, process, folder)
        yield Bouncer(port=port, server_pool_size=pool_size)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(folder, ignore_errors=True)


def _wait_listening(port: int, process: subprocess.Popen[bytes], folder: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log = (
                (folder / "pgbouncer.log").read_text()
                if (folder / "pgbouncer.log").exists()
                else ""
            )
            stderr = process.stderr.read().decode() if process.stderr else ""
            raise RuntimeError(f"pgbouncer exited with {process.returncode}: {stderr}{log}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"pgbouncer did not listen on {port} within {START_TIMEOUT_S:g} s")
