"""A TCP proxy in front of a server, to take it away and give it back with its data kept:
``down()`` refuses connections (and cuts the open ones) as a stopped server does,
``hang()`` accepts and forwards nothing as a hung one does, ``up()`` restores it. Used to
stop the S3 server of a test stack without losing the objects moto holds in memory."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

from tests.support.own_servers import free_port


class TcpProxy:
    def __init__(self, target_port: int, *, host: str = "127.0.0.1") -> None:
        self.host = host
        self.target_port = target_port
        self.port = free_port()
        self.hung = False
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def up(self) -> None:
        self.hung = False
        if self._listener is not None:
            return
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, self.port))
        listener.listen(128)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        """Connection refused from now on; open connections are cut."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            sockets, self._open = self._open, set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def hang(self) -> None:
        """Connections are accepted and bytes are read, but nothing is forwarded."""
        self.hung = True

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # down()
            try:
                server = socket.create_connection((self.host, self.target_port), timeout=5)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open |= {client, server}
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                while self.hung:
                    time.sleep(0.05)
                data = source.recv(65536)
                if not data:
                    break
                while self.hung:
                    time.sleep(0.05)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._open -= {source, sink}
