"""A throw-away stack for tests and benchmarks: moto S3, a fresh Postgres database, a
flushed Redis database index, and the services as real processes.

Postgres and Redis must already be running (CI starts them); everything else is created
here and removed on close, so runs never see each other's data.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from services.stack.manager import ServiceSpec, Stack, default_services, wait_for_http

DEFAULT_ADMIN_URL = "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS = "redis://127.0.0.1:6379"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def held_port() -> socket.socket:
    """A socket bound to a free loopback port and kept open, never listening, so that the
    port stays free for the API until the stack closes: a port from ``free_port`` is free
    only when it is picked, and once a stack's S3 server, then the API, found theirs taken
    (benchmarks/scale.py in the suite: "Address already in use" in every API process). No
    bind to port 0 and no connection's local port takes a port a socket is bound to, and
    the API's own sockets (services/stack/api_processes.py) share it through
    SO_REUSEPORT; only listening sockets are handed connections."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def create_database(admin_url: str, name: str) -> str:
    from sqlalchemy import create_engine, text

    engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return _with_database(admin_url, name)


def drop_database(admin_url: str, name: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = :name AND pid <> pg_backend_pid()"
            ),
            {"name": name},
        )
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
    engine.dispose()


OWNER_KEY = "benchstack:ephemeral-stack-owner"


def flush_redis(url: str) -> None:
    """Empty the database, keeping the claim of the stack that holds it."""
    import redis

    client = redis.Redis.from_url(url)
    owner = client.get(OWNER_KEY)
    client.flushdb()
    if owner is not None:
        client.set(OWNER_KEY, owner)
    client.close()


REDIS_DATABASES = 16  # redis-server's default "databases"
# (server, database index) held by a stack of this process that has not closed.
_CLAIMED_REDIS_DBS: set[tuple[str, int | None]] = set()


def _owner_tag() -> str:
    """This process, as no later process given the same pid can pass for it."""
    import psutil

    pid = os.getpid()
    return f"{socket.gethostname()}|{pid}|{psutil.Process(pid).create_time():.2f}"


def _owner_gone(tag: str) -> bool:
    """A claim left by a process of this host that no longer runs (killed, crashed)."""
    import psutil

    host, _, rest = tag.partition("|")
    pid, _, started = rest.partition("|")
    if host != socket.gethostname() or not pid.isdigit():
        return False  # another machine's stack (or not ours): never taken over from here
    try:
        return f"{psutil.Process(int(pid)).create_time():.2f}" != started
    except psutil.NoSuchProcess:
        return True


def _claim_redis_db(server: str) -> int:
    """The lowest database index from BENCHSTACK_TEST_REDIS_DB (11) up that no live stack
    holds, in this process (a set) or any other (an owner key in the database itself, set
    only where none is, or where its process is gone)."""
    import redis

    first = int(os.environ.get("BENCHSTACK_TEST_REDIS_DB", "11"))
    tag = _owner_tag()
    for index in range(first, REDIS_DATABASES):
        if (server, index) in _CLAIMED_REDIS_DBS:
            continue
        client = redis.Redis.from_url(f"{server.rstrip('/')}/{index}", decode_responses=True)
        try:
            held = client.get(OWNER_KEY)
            if held is not None and not _owner_gone(str(held)):
                continue
            if _others_connected(client, index):
                # Services whose stack's process died (killed, timed out) live on and
                # consume this index's queues: a stack here would lose messages to them.
                continue
            # SET NX where none was; where a dead process's claim was, only if it is still
            # that one (two processes taking over at once: one wins).
            taken = (
                client.set(OWNER_KEY, tag, nx=True)
                if held is None
                else client.getset(OWNER_KEY, tag) == held
            )
        finally:
            client.close()
        if taken:
            _CLAIMED_REDIS_DBS.add((server, index))
            return index
    raise RuntimeError(
        f"every Redis database from {first} to {REDIS_DATABASES - 1} is held by a running "
        "ephemeral stack; close one first"
    )


def _others_connected(client: Any, index: int) -> bool:
    """Whether a client other than ``client`` has ``index`` selected (orphaned services
    of a stack whose owner is gone hold no claim, yet still consume its queues)."""
    own = client.client_id()
    return any(
        int(c.get("db", -1)) == index and int(c.get("id", -1)) != own for c in client.client_list()
    )


def _release_redis_db(server: str, index: int) -> None:
    import redis

    client = redis.Redis.from_url(f"{server.rstrip('/')}/{index}", decode_responses=True)
    try:
        if client.get(OWNER_KEY) == _owner_tag():
            client.delete(OWNER_KEY)
    finally:
        client.close()
    _CLAIMED_REDIS_DBS.discard((server, index))


@dataclass
class EphemeralStack:
    """Call ``start_servers()``, then ``start_services()``; ``close()`` undoes everything."""

    admin_url: str = field(
        default_factory=lambda: os.environ.get("BENCHSTACK_TEST_POSTGRES", DEFAULT_ADMIN_URL)
    )
    redis_base: str = field(
        default_factory=lambda: os.environ.get("BENCHSTACK_TEST_REDIS", DEFAULT_REDIS)
    )
    # None: the lowest database index from BENCHSTACK_TEST_REDIS_DB (11) up that no other
    # live stack holds, in this process or another (a benchmark beside a test run). Two
    # stacks on one index steal each other's messages (a preprocess worker acks a request
    # whose evaluation is not in its database) and the second one's flush empties the
    # first one's queues: measured, a benchmark started beside another failed 55 of its 68
    # evaluations as stalled.
    redis_db: int | None = None
    heartbeat_s: float = 1.0
    # The default data_dir is a fresh temp folder, removed on close (logs go with it).
    remove_data_dir: bool = True
    data_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="benchstack-")))
    _api_port_hold: socket.socket = field(default_factory=held_port)
    api_port: int = field(init=False)  # the held socket's, readable after close too
    database_name: str = field(default_factory=lambda: f"benchstack_{uuid.uuid4().hex[:10]}")
    # Settings for this stack's services on top of env(), e.g. short leases for fault tests.
    extra_env: dict[str, str] = field(default_factory=dict)
    # True: the S3 server runs in a process of its own rather than on threads of this one,
    # where its requests would take turns on this process's GIL with whatever it measures
    # (benchmarks/api_load.py's clients time their requests here).
    s3_in_own_process: bool = False
    _moto: Any = None
    _moto_process: subprocess.Popen[bytes] | None = None
    _stacks: list[Stack] = field(default_factory=list)
    database_url: str = ""

    def __post_init__(self) -> None:
        self.api_port = self._api_port_hold.getsockname()[1]

    @property
    def broker_url(self) -> str:
        if self.redis_db is None:
            self.redis_db = _claim_redis_db(self.redis_base)
        return f"{self.redis_base.rstrip('/')}/{self.redis_db}"

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def start_servers(self) -> None:
        import logging

        from moto.server import ThreadedMotoServer

        # One access-log line per S3 request would drown the test and benchmark output.
        logging.getLogger("werkzeug").setLevel(logging.WARNING)

        self.s3_port = free_port()
        if self.s3_in_own_process:
            self._moto_process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.s3_port)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
            )
            if not wait_for_http(f"http://127.0.0.1:{self.s3_port}/", timeout_s=60):
                raise RuntimeError("the S3 server (moto) did not start in 60 s")
        else:
            self._moto = ThreadedMotoServer(
                ip_address="127.0.0.1", port=self.s3_port, verbose=False
            )
            self._moto.start()
        self.database_url = create_database(self.admin_url, self.database_name)
        flush_redis(self.broker_url)
        from shared.db.migrations import upgrade_head

        upgrade_head(self.database_url)

    def env(self) -> dict[str, str]:
        return {
            "BENCHSTACK_ENVIRONMENT": "test",
            "BENCHSTACK_DATA_DIR": str(self.data_dir),
            "BENCHSTACK_DATABASE_URL": self.database_url,
            "BENCHSTACK_BROKER_URL": self.broker_url,
            "BENCHSTACK_S3_ENDPOINT": f"127.0.0.1:{self.s3_port}",
            "BENCHSTACK_S3_ACCESS_KEY": "testing",
            "BENCHSTACK_S3_SECRET_KEY": "testing-secret",
            "BENCHSTACK_S3_BUCKET": "benchstack-test",
            "BENCHSTACK_API_URL": self.api_url,
            "BENCHSTACK_AGENT_HEARTBEAT_SECONDS": str(self.heartbeat_s),
            # Small shards so that even a tiny dataset exercises the fan-out and the join.
            "BENCHSTACK_SHARD_SAMPLES": "8",
            **self.extra_env,
        }

    def start_services(
        self, specs: list[ServiceSpec] | None = None, *, name: str = "main", wait_api: bool = True
    ) -> Stack:
        """Start services (default: all, with only the null backend) as one group."""
        specs = (
            specs
            if specs is not None
            else default_services(port=self.api_port, frameworks=["null"], preprocess_concurrency=2)
        )
        stack = Stack(self.data_dir / "stacks" / name)
        stack.start(specs, env=self.env())
        self._stacks.append(stack)
        has_api = any(s.name == "api" for s in specs)
        if wait_api and has_api and not wait_for_http(self.api_url + "/healthz", timeout_s=60):
            log = stack.log_dir / "api.log"
            raise RuntimeError(f"the API did not start; its log: {log.read_text()[-2000:]}")
        return stack

    def wait_for_agents(self, count: int = 1, *, timeout_s: float = 60.0) -> None:
        """Block until ``count`` inference agents are live (they register once consuming)."""
        import time

        from shared.db import evaluation_repo
        from shared.db.session import session_scope

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with session_scope(self.database_url) as session:
                live = evaluation_repo.live_agents(session, within_s=self.heartbeat_s * 3)
            if len(live) >= count:
                return
            time.sleep(0.2)
        raise RuntimeError(f"{count} inference agent(s) did not register; logs:\n{self.logs()}")

    def close(self) -> None:
        for stack in reversed(self._stacks):
            stack.stop(grace_s=10)
        self._stacks.clear()
        with contextlib.suppress(Exception):
            flush_redis(self.broker_url)
        if self.database_url:
            with contextlib.suppress(Exception):
                drop_database(self.admin_url, self.database_name)
        if self._moto is not None:
            self._moto.stop()
        if self._moto_process is not None:
            self._moto_process.terminate()
            self._moto_process.wait(timeout=15)
        self._api_port_hold.close()
        if self.remove_data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        if self.redis_db is not None:
            with contextlib.suppress(Exception):
                _release_redis_db(self.redis_base, self.redis_db)

    def logs(self) -> str:
        """Every service log, for a failing test's report."""
        parts = []
        for stack in self._stacks:
            for path in sorted(stack.log_dir.glob("*.log")):
                parts.append(f"===== {path}\n{path.read_text(errors='replace')[-4000:]}")
        return "\n".join(parts)
