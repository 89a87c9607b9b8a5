"""KServe-V2 clients over HTTP and gRPC, behind one small interface for the backend.

``tritonclient.http`` is built on gevent and its client must not be shared between
threads, so the HTTP side keeps one client per thread and runs asynchronous requests on
a thread pool. ``tritonclient.grpc``'s client is thread-safe and has a native callback
API, which the gRPC side uses directly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import np_to_triton_dtype

# callback(result, error): exactly one of the two is None.
Callback = Callable[[np.ndarray | None, BaseException | None], None]


@dataclass(frozen=True)
class Target:
    """Which model and tensors to ask for, and how."""

    url: str
    model_name: str
    model_version: str
    input_name: str
    output_name: str
    timeout_s: float
    # MLServer does not accept the binary tensor extension from tritonclient.http.
    binary_data: bool = True


class V2Client(Protocol):
    def server_live(self) -> bool: ...
    def server_metadata(self) -> dict[str, Any]: ...
    def model_ready(self) -> bool: ...
    def model_metadata(self) -> dict[str, Any]: ...
    def infer(self, batch: np.ndarray) -> np.ndarray: ...
    def infer_async(self, batch: np.ndarray, callback: Callback) -> None: ...
    def close(self) -> None: ...


def _output(result: Any, name: str) -> np.ndarray:
    out = result.as_numpy(name)
    if out is None:
        raise RuntimeError(f"output_name: the server returned no tensor {name!r}")
    return np.asarray(out)


class HttpClient:
    def __init__(self, target: Target, concurrency: int) -> None:
        self.target = target
        self._local = threading.local()
        self._clients: list[httpclient.InferenceServerClient] = []
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="triton-http")

    def _client(self) -> httpclient.InferenceServerClient:
        client = getattr(self._local, "client", None)
        if client is None:
            client = httpclient.InferenceServerClient(
                self.target.url,
                connection_timeout=self.target.timeout_s,
                network_timeout=self.target.timeout_s,
            )
            self._local.client = client
            with self._lock:
                self._clients.append(client)
        return client

    def server_live(self) -> bool:
        return bool(self._client().is_server_live())

    def server_metadata(self) -> dict[str, Any]:
        return dict(self._client().get_server_metadata())

    def model_ready(self) -> bool:
        return bool(
            self._client().is_model_ready(self.target.model_name, self.target.model_version)
        )

    def model_metadata(self) -> dict[str, Any]:
        return dict(
            self._client().get_model_metadata(self.target.model_name, self.target.model_version)
        )

    def infer(self, batch: np.ndarray) -> np.ndarray:
        t = self.target
        request = httpclient.InferInput(
            t.input_name, list(batch.shape), np_to_triton_dtype(batch.dtype)
        )
        request.set_data_from_numpy(batch, binary_data=t.binary_data)
        wanted = httpclient.InferRequestedOutput(t.output_name, binary_data=t.binary_data)
        result = self._client().infer(
            t.model_name, [request], model_version=t.model_version, outputs=[wanted]
        )
        return _output(result, t.output_name)

    def infer_async(self, batch: np.ndarray, callback: Callback) -> None:
        def run() -> None:
            try:
                out = self.infer(batch)
            except Exception as exc:  # reported to the caller, who completes the query
                callback(None, exc)
            else:
                callback(out, None)

        self._pool.submit(run)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        with self._lock:
            for client in self._clients:
                client.close()
            self._clients.clear()


class GrpcClient:
    def __init__(self, target: Target) -> None:
        self.target = target
        self._client = grpcclient.InferenceServerClient(target.url)

    def server_live(self) -> bool:
        return bool(self._client.is_server_live(client_timeout=self.target.timeout_s))

    def server_metadata(self) -> dict[str, Any]:
        return dict(self._client.get_server_metadata(as_json=True))

    def model_ready(self) -> bool:
        return bool(self._client.is_model_ready(self.target.model_name, self.target.model_version))

    def model_metadata(self) -> dict[str, Any]:
        t = self.target
        return dict(self._client.get_model_metadata(t.model_name, t.model_version, as_json=True))

    def _request(self, batch: np.ndarray) -> tuple[list[Any], list[Any]]:
        t = self.target
        request = grpcclient.InferInput(
            t.input_name, list(batch.shape), np_to_triton_dtype(batch.dtype)
        )
        request.set_data_from_numpy(batch)
        return [request], [grpcclient.InferRequestedOutput(t.output_name)]

    def infer(self, batch: np.ndarray) -> np.ndarray:
        t = self.target
        inputs, outputs = self._request(batch)
        result = self._client.infer(
            t.model_name,
            inputs,
            model_version=t.model_version,
            outputs=outputs,
            client_timeout=t.timeout_s,
        )
        return _output(result, t.output_name)

    def infer_async(self, batch: np.ndarray, callback: Callback) -> None:
        t = self.target

        def done(result: Any, error: Any) -> None:
            if error is not None:
                callback(None, error)
                return
            try:
                out = _output(result, t.output_name)
            except Exception as exc:
                callback(None, exc)
            else:
                callback(out, None)

        inputs, outputs = self._request(batch)
        self._client.async_infer(
            t.model_name,
            inputs,
            done,
            model_version=t.model_version,
            outputs=outputs,
            client_timeout=t.timeout_s,
        )

    def close(self) -> None:
        self._client.close()
