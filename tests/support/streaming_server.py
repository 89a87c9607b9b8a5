"""A small OpenAI-compatible streaming server on loopback, a real HTTP server (chunked
server-sent events over keep-alive connections), whose behaviour a test sets: it streams
one chunk a token as asked, or breaks the stream, answers an HTTP error, stalls past a
client's timeout, stops early as a server that ignores ``ignore_eos``, or reports a
``usage`` that disagrees with its chunks, or sends two tokens an event, saying so in
vLLM's ``token_ids`` ("pairs"). It keeps the bodies and headers it received."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODES = ("normal", "break", "error", "slow", "short", "usage", "pairs")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *_: Any) -> None:
        """Quiet: tests read what they need from the server's records."""

    def setup(self) -> None:
        super().setup()
        self.server.connections.add(self.connection)

    def do_GET(self) -> None:
        answers = {
            "/version": {"version": "streaming-server-1"},
            "/v1/models": {"data": [{"id": "other"}, {"id": "tiny", "max_model_len": 1024}]},
        }
        payload = json.dumps(answers.get(self.path, {"error": "no such path"})).encode()
        self.send_response(200 if self.path in answers else 404)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.received.append((self.path, dict(self.headers), body))
        mode = self.server.mode
        if len(self.server.received) > self.server.break_after:
            mode = "break"  # a server dying mid-run
        if mode == "error" or self.path not in ("/v1/completions", "/v1/chat/completions"):
            payload = b'{"error": "overloaded"}'
            self.send_response(503 if mode == "error" else 404)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chat = self.path.endswith("chat/completions")
        tokens = int(body["max_tokens"]) // 2 if mode == "short" else int(body["max_tokens"])
        if mode == "slow":
            time.sleep(self.server.stall_s)
        per_event = 2 if mode == "pairs" else 1
        for n in range(0, tokens, per_event):
            if mode == "break" and n == 2:
                self.wfile.flush()
                self.connection.shutdown(2)  # mid-stream, no [DONE], no last chunk
                self.close_connection = True
                return
            choice = (
                {"index": 0, "delta": {"content": "ka"}} if chat else {"index": 0, "text": "ka"}
            )
            if mode == "pairs":
                choice["token_ids"] = list(range(n, min(n + per_event, tokens)))
            self._event({"choices": [choice]})
            time.sleep(self.server.token_s)
        usage = tokens + 3 if mode == "usage" else tokens
        self._event({"choices": [], "usage": {"completion_tokens": usage}})
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")
        if mode == "close_idle":
            # As a server whose keep-alive timeout ran out: the connection is closed after
            # the response, without a "Connection: close" the client could have read.
            self.wfile.flush()
            self.connection.shutdown(2)
            self.close_connection = True

    def _event(self, event: dict[str, Any]) -> None:
        self._chunk(b"data: " + json.dumps(event).encode() + b"\n\n")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    mode = "normal"
    token_s = 0.0
    stall_s = 2.0
    # Requests after this many get broken streams.
    break_after = 1 << 30
    received: list[tuple[str, dict[str, str], dict[str, Any]]]
    connections: set[Any]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that left mid-stream (a test's timeout) is no error of the server's."""

    def stop(self) -> None:
        """As a killed server: no listener and every open connection cut."""
        self.shutdown()
        self.server_close()
        for connection in list(self.connections):
            with contextlib.suppress(OSError):  # already closed by its client
                connection.shutdown(2)


@contextmanager
def streaming_server(token_s: float = 0.0) -> Iterator[_Server]:
    """The server on an ephemeral loopback port (``server.url``), stopped after."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.received = []
    server.connections = set()
    server.token_s = token_s
    server.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop()
        thread.join()
