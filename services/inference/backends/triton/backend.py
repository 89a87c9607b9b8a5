"""Client backend for a KServe-V2 inference server (Triton, MLServer, KServe), HTTP or gRPC.

The model runs in the server; this backend sends batches and reads the first output. It
is asynchronous (``Backend.asynchronous``): ``predict_async(batch, callback)``
returns at once and calls ``callback(result, None)`` or ``callback(None, error)`` on
completion, so the SUT can issue queries at LoadGen's scheduled times without waiting
for earlier ones (no coordinated omission in Server and MultiStream).

Options (``BackendOptions.extra``):
  url            host:port (default 127.0.0.1:8000 for http, 127.0.0.1:8001 for grpc)
  protocol       http | grpc (default http)
  model_name     default: the manifest's name
  model_version  default: "" (the server's choice)
  input_name, output_name   default: the manifest's inputs[0]/outputs[0].layer_name
  binary_data    auto | true | false (http only; auto = false for MLServer, else true)
  concurrency    HTTP requests in flight for predict_async (default 8)
  timeout_s      per request (default 60)
"""

from __future__ import annotations

from importlib.metadata import version as package_version
from typing import Any

import numpy as np

from services.core.manifest import ModelManifest
from services.inference.backend_interface import (
    Backend,
    BackendError,
    BackendUnavailable,
    choice_option,
)
from services.inference.backends.triton.clients import (
    Callback,
    GrpcClient,
    HttpClient,
    Target,
    V2Client,
)

PROTOCOLS = ("http", "grpc")
DEFAULT_URLS = {"http": "127.0.0.1:8000", "grpc": "127.0.0.1:8001"}
# KServe-V2 datatype of each manifest element type.
V2_DATATYPES = {
    "float32": "FP32",
    "float16": "FP16",
    "uint8": "UINT8",
    "int8": "INT8",
    "int32": "INT32",
    "int64": "INT64",
}


def _flag(value: Any, field: str) -> bool | None:
    """true/false, or None for auto."""
    text = str(value).lower()
    if text in ("auto", "none"):
        return None
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise BackendError(f"{field}: {value!r} is not accepted; accepted: auto, true, false")


class TritonBackend(Backend):
    name = "triton"
    asynchronous = True

    def version(self) -> str:
        # The client library's version; the server's is in describe().
        return package_version("tritonclient")

    def load(self, manifest: ModelManifest) -> None:
        extra = self.options.extra
        self.protocol = choice_option(extra, "protocol", PROTOCOLS, "http")
        try:
            concurrency = int(extra.get("concurrency", 8))
            timeout_s = float(extra.get("timeout_s", 60.0))
        except (TypeError, ValueError) as exc:
            raise BackendError(f"concurrency/timeout_s: must be numbers ({exc})") from exc
        if concurrency < 1 or timeout_s <= 0:
            raise BackendError("concurrency: must be >= 1 and timeout_s: must be > 0")
        target = Target(
            url=str(extra.get("url", DEFAULT_URLS[self.protocol])),
            model_name=str(extra.get("model_name", manifest.name)),
            model_version=str(extra.get("model_version", "")),
            input_name=str(extra.get("input_name", manifest.inputs[0].layer_name)),
            output_name=str(extra.get("output_name", manifest.outputs[0].layer_name)),
            timeout_s=timeout_s,
        )
        client = self._connect(target, concurrency)
        self.server = client.server_metadata()
        binary = _flag(extra.get("binary_data", "auto"), "binary_data")
        if binary is None:
            binary = self.server.get("name") != "mlserver"
        if self.protocol == "http" and binary != target.binary_data:
            client.close()
            target = Target(**{**target.__dict__, "binary_data": binary})
            client = HttpClient(target, concurrency)
        self.target = target
        self.client: V2Client = client
        self._check_model(manifest)

    def _connect(self, target: Target, concurrency: int) -> V2Client:
        client: V2Client = (
            HttpClient(target, concurrency) if self.protocol == "http" else GrpcClient(target)
        )
        try:
            live = client.server_live()
        except Exception as exc:  # connection refused, DNS, TLS: all mean "not reachable"
            live, reason = False, str(exc)
        else:
            reason = "it answers but is not live"
        if not live:
            client.close()
            raise BackendUnavailable(
                f"url: no KServe-V2 server answers {self.protocol} at {target.url}: {reason}"
            )
        try:
            ready, reason = client.model_ready(), "it is not ready"
        except Exception as exc:  # gRPC servers answer an unknown model with an error
            ready, reason = False, str(exc)
        if not ready:
            client.close()
            raise BackendUnavailable(
                f"model_name: {target.model_name!r} (version {target.model_version or 'default'}) "
                f"cannot be used on {target.url}: {reason}"
            )
        return client

    def _check_model(self, manifest: ModelManifest) -> None:
        """Fail at load, not at the first query, when names or types do not match the server."""
        metadata = self.client.model_metadata()
        inputs = {t["name"]: t for t in metadata.get("inputs", [])}
        outputs = [t["name"] for t in metadata.get("outputs", [])]
        t = self.target
        # Servers may omit tensor metadata (MLServer custom runtimes do); only check what is given.
        if inputs and t.input_name not in inputs:
            raise BackendError(
                f"input_name: {t.input_name!r} is not an input of {t.model_name}; "
                f"accepted: {', '.join(inputs)}"
            )
        if outputs and t.output_name not in outputs:
            raise BackendError(
                f"output_name: {t.output_name!r} is not an output of {t.model_name}; "
                f"accepted: {', '.join(outputs)}"
            )
        expected = V2_DATATYPES[manifest.inputs[0].element_type]
        served = inputs.get(t.input_name, {}).get("datatype")
        if served and served != expected:
            raise BackendError(
                f"inputs[0].element_type: {manifest.inputs[0].element_type} ({expected}) but the "
                f"server expects {served} for {t.input_name!r}"
            )

    def predict(self, batch: np.ndarray) -> np.ndarray:
        try:
            return self.client.infer(np.ascontiguousarray(batch))
        except Exception as exc:
            raise BackendError(
                f"{self.protocol}://{self.target.url}/{self.target.model_name}: {exc}"
            ) from exc

    def predict_async(self, batch: np.ndarray, callback: Callback) -> None:
        """Send ``batch`` and return at once; ``callback`` runs on a client thread when done.

        ``callback`` is called exactly once, also when the request cannot even be sent, so
        the SUT can always complete the query.
        """
        try:
            self.client.infer_async(np.ascontiguousarray(batch), callback)
        except Exception as exc:  # refused before sending (closed client, bad tensor)
            callback(None, exc)

    def describe(self) -> dict[str, Any]:
        t = self.target
        return {
            **super().describe(),
            "protocol": self.protocol,
            "url": t.url,
            "model_name": t.model_name,
            "model_version": t.model_version or "default",
            "binary_data": t.binary_data if self.protocol == "http" else True,
            "server": f"{self.server.get('name', '?')} {self.server.get('version', '?')}",
        }

    def close(self) -> None:
        client = self.__dict__.pop("client", None)
        if client is not None:
            client.close()
