"""A client of any OpenAI-compatible server (vLLM, SGLang, TGI's messages API, llama.cpp's
server, Ollama): ``/v1/completions`` or ``/v1/chat/completions`` with ``stream: true``,
its server-sent events read as they arrive, one request per call (concurrency is the
SUT's worker threads, each with its own keep-alive connection).

Counting tokens: one event may carry several tokens (vLLM merges what a slow reader has
not taken yet, and holds back tokens that do not decode to text alone), so an event is
never taken for one token when the server says more. Each event counts the tokens the
server names in it: vLLM's ``token_ids`` (asked with ``return_token_ids``), else its
``logprobs`` entries, else one for an event with text (a server that says nothing more).
They are reported to the sink the moment the event arrives, all at once: the SUT gives
the first of them the gap since the previous event and the others a gap of zero, as the
reader saw them (sut.py), so inter-token latency has one gap per token after the first
and its gaps add up to the time from the first token to the last. The end takes the
server's ``usage.completion_tokens`` where it sends one (``stream_options.include_usage``)
as the count; more tokens counted than it says is a failure.

``ignore_eos`` and ``min_tokens`` ask the server for exactly ``max_tokens``; a request
that ends short, an HTTP error, a timeout or a stream that breaks before ``[DONE]`` is a
failed request with its reason, never an exception.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from services.workloads.generative.engine import Generation, GenerationRequest, TokenSink

APIS = ("completions", "chat")
MAX_LINE_BYTES = 1 << 20
_PATHS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


class StreamFailure(Exception):
    """Why one request failed (its message is the reason a run reports)."""


class OpenAIEngine:
    """Engine (engine.py) over an OpenAI-compatible endpoint."""

    max_batch = 1

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api: str = "completions",
        timeout_s: float = 60.0,
        api_key_env: str = "OPENAI_API_KEY",
        ignore_eos: bool = True,
        token_ids: bool = True,
    ):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"url: {url!r} is not an http(s) URL such as http://127.0.0.1:8000")
        if api not in APIS:
            raise ValueError(f"api: {api!r} is not accepted; use one of {', '.join(APIS)}")
        self.parts = parts
        self.model = model
        self.api = api
        self.timeout_s = timeout_s
        self.ignore_eos = ignore_eos
        # vLLM's return_token_ids: how many tokens each event carries, at no cost to the
        # server (logprobs would cost it a softmax a token). Off for a server that refuses it.
        self.token_ids = token_ids
        self.api_key = os.environ.get(api_key_env, "")
        self._local = threading.local()
        self._connections: list[http.client.HTTPConnection] = []

    def _connection(self) -> http.client.HTTPConnection:
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is None:
            kind = (
                http.client.HTTPSConnection
                if self.parts.scheme == "https"
                else http.client.HTTPConnection
            )
            connection = kind(self.parts.hostname or "", self.parts.port, timeout=self.timeout_s)
            self._local.connection = connection
            self._connections.append(connection)
        return connection

    def body(self, request: GenerationRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": 0.0,
        }
        if self.ignore_eos:
            body |= {"ignore_eos": True, "min_tokens": request.max_tokens}
        if self.token_ids:
            body["return_token_ids"] = True
        prompt = request.prompt_text or list(request.prompt_ids)
        if self.api == "chat":
            body["messages"] = [{"role": "user", "content": request.prompt_text}]
        else:
            body["prompt"] = prompt
        return body

    def generate(
        self, requests: Sequence[GenerationRequest], sinks: Sequence[TokenSink]
    ) -> list[Generation]:
        return [self._one(r, s) for r, s in zip(requests, sinks, strict=True)]

    def _one(self, request: GenerationRequest, sink: TokenSink) -> Generation:
        streamed = 0
        try:
            streamed, usage = self._stream(request, sink)
        except StreamFailure as exc:
            return Generation(streamed, str(exc))
        except TimeoutError:
            self._drop()
            return Generation(0, f"timed out after {self.timeout_s:g} s")
        except (OSError, http.client.HTTPException) as exc:
            self._drop()
            return Generation(0, f"connection: {type(exc).__name__}: {exc}".rstrip(": "))
        count = usage if usage is not None else streamed
        if usage is not None and streamed > usage:
            return Generation(count, f"usage says {usage} tokens but {streamed} were streamed")
        if count != request.max_tokens:
            return Generation(
                count,
                f"{count} of {request.max_tokens} tokens: the server stopped early "
                "(does it take ignore_eos/min_tokens?)",
            )
        return Generation(count)

    def _send(self, body: str) -> http.client.HTTPResponse:
        """The response to one request. A kept-alive connection the server has closed
        meanwhile (uvicorn closes one idle for 5 s; a thread of a Server run at a low rate
        waits longer than that between its requests) fails before the server has read
        anything: that request goes once more on a new connection, as HTTP clients do."""
        path = self.parts.path.rstrip("/").removesuffix("/v1") + _PATHS[self.api]
        reused = getattr(self._local, "used", False)
        try:
            connection = self._connection()
            connection.request("POST", path, body, self._headers())
            response = connection.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            if not reused:
                raise
            self._drop()
            connection = self._connection()
            connection.request("POST", path, body, self._headers())
            response = connection.getresponse()
        self._local.used = True
        return response

    def _stream(self, request: GenerationRequest, sink: TokenSink) -> tuple[int, int | None]:
        response = self._send(json.dumps(self.body(request)))
        if response.status != 200:
            text = response.read(500).decode("utf-8", "replace").strip()
            raise StreamFailure(f"HTTP {response.status}: {text[:200]}")
        streamed, usage = 0, None
        while True:
            try:
                line = response.readline(MAX_LINE_BYTES)
            except (http.client.IncompleteRead, ConnectionError):
                line = b""
            if not line:
                self._drop()
                raise StreamFailure(f"the stream broke before [DONE] after {streamed} tokens")
            data = line.strip().removeprefix(b"data:").strip()
            if not line.startswith(b"data:") or not data:
                continue  # a comment, an event name or the blank line between events
            if data == b"[DONE]":
                response.read()
                return streamed, usage
            try:
                event = json.loads(data)
            except ValueError:
                self._drop()
                raise StreamFailure(f"an event is not JSON: {data[:80]!r}") from None
            if event.get("usage"):
                usage = int(event["usage"].get("completion_tokens", 0))
            tokens = self._tokens(event)
            if tokens:
                streamed += tokens
                sink.token(tokens)

    def _tokens(self, event: dict[str, Any]) -> int:
        """How many tokens one event carries (the module's docstring says the rule)."""
        choices = event.get("choices") or []
        if not choices or not isinstance(choices[0], dict):
            return 0
        choice = choices[0]
        if isinstance(choice.get("token_ids"), list):
            return len(choice["token_ids"])
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict):
            entries = logprobs.get("content" if self.api == "chat" else "tokens")
            if isinstance(entries, list):
                return len(entries)
        if self.api == "chat":
            return 1 if (choice.get("delta") or {}).get("content") else 0
        return 1 if choice.get("text") else 0

    def describe(self) -> dict[str, Any]:
        """What the server says of itself, best effort (recorded with the run): its
        ``/version`` (vLLM's, SGLang's) and ``/v1/models`` entry for this model."""
        found: dict[str, Any] = {"url": self.parts.geturl()}
        for key, path in (("version", "/version"), ("models", "/v1/models")):
            try:
                connection = self._connection()
                connection.request("GET", path, headers=self._headers())
                response = connection.getresponse()
                body = response.read(MAX_LINE_BYTES)
                if response.status == 200:
                    found[key] = json.loads(body)
                else:
                    found[key] = f"HTTP {response.status}"
            except (OSError, http.client.HTTPException, ValueError) as exc:
                self._drop()
                found[key] = f"unavailable: {type(exc).__name__}"
        models = found.get("models")
        if isinstance(models, dict):
            entries = [m for m in models.get("data") or [] if isinstance(m, dict)]
            found["models"] = [m for m in entries if m.get("id") == self.model] or entries[:5]
        return found

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _drop(self) -> None:
        """A connection in an unknown state is closed; the next request opens a new one."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None
        self._local.used = False

    def close(self) -> None:
        for connection in self._connections:
            connection.close()
