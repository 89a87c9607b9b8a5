"""Serve the API from several processes, each with its own listening socket on one port.

Why not uvicorn's ``--workers``: there every process accepts from one shared socket, and
the first process to wake takes a whole burst of new connections (asyncio accepts up to
its backlog in one go). Fifty clients that connect at once all land on one process while
the others idle, and since clients keep their connections, the imbalance lasts: measured
under ``benchmarks/api_load.py``, one process at 100 % CPU and the other at 9 %. With
``SO_REUSEPORT`` each process listens on its own socket and the kernel spreads new
connections over the sockets by a hash of their addresses, so the load follows.

The parent only supervises: it starts the processes, restarts one that dies (at most
``MAX_RESTARTS`` in ``RESTART_WINDOW_SECONDS``, then it gives up and exits 1 so that
``benchstack up`` reports it), and on SIGTERM or SIGINT stops them all.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import sys
import time
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from types import FrameType

log = logging.getLogger("benchstack.api")

APP = "services.stack.entry:served_api"
BACKLOG = 2048  # uvicorn's default
STOP_GRACE_SECONDS = 10.0
MAX_RESTARTS = 5
RESTART_WINDOW_SECONDS = 60.0


def reuse_port_socket(host: str, port: int) -> socket.socket:
    """A listening socket on host:port that other processes of this user may share."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(address)
    sock.listen(BACKLOG)
    sock.set_inheritable(True)
    return sock


def serve_one(host: str, port: int, access_log: bool) -> None:
    """One API process: its own socket, one uvicorn server."""
    import uvicorn

    sock = reuse_port_socket(host, port)
    config = uvicorn.Config(APP, factory=True, access_log=access_log)
    uvicorn.Server(config).run(sockets=[sock])


class Supervisor:
    def __init__(self, host: str, port: int, count: int, access_log: bool) -> None:
        self.args = (host, port, access_log)
        self.count = count
        self.context = multiprocessing.get_context("spawn")
        self.processes: list[BaseProcess] = []
        self.restarts: list[float] = []
        self.stopping = False

    def _start(self) -> BaseProcess:
        process = self.context.Process(target=serve_one, args=self.args, daemon=False)
        process.start()
        return process

    def _stop(self, signum: int, _frame: FrameType | None) -> None:
        self.stopping = True

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        self.processes = [self._start() for _ in range(self.count)]
        try:
            while not self.stopping:
                wait([p.sentinel for p in self.processes], timeout=0.5)
                for index, process in enumerate(self.processes):
                    if process.is_alive() or self.stopping:
                        continue
                    if not self._may_restart():
                        log.error(
                            "API process exited with %s; %d restarts in %.0f s, giving up",
                            process.exitcode,
                            MAX_RESTARTS,
                            RESTART_WINDOW_SECONDS,
                        )
                        return 1
                    log.warning("API process exited with %s; starting another", process.exitcode)
                    self.processes[index] = self._start()
            return 0
        finally:
            self._stop_all()

    def _may_restart(self) -> bool:
        now = time.monotonic()
        self.restarts = [t for t in self.restarts if now - t < RESTART_WINDOW_SECONDS]
        self.restarts.append(now)
        return len(self.restarts) <= MAX_RESTARTS

    def _stop_all(self) -> None:
        for process in self.processes:
            if process.is_alive() and process.pid is not None:
                os.kill(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for process in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join()


def serve_processes(host: str, port: int, count: int, access_log: bool) -> None:
    """Serve on host:port from ``count`` processes until SIGTERM or SIGINT."""
    if port == 0:
        raise ValueError("port: 0 picks a different port per process; give a port number")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(message)s")
    sys.exit(Supervisor(host, port, count, access_log).run())
