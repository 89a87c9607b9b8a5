"""Triton/KServe-V2 client backend against a real MLServer, over HTTP and gRPC."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest

from services.core.manifest import ModelManifest
from services.inference.backend_interface import (
    Backend,
    BackendError,
    BackendOptions,
    BackendUnavailable,
)
from services.inference.backends.convert import ConvertedModel
from services.inference.backends.registry import create_backend
from tests.support.kserve_server import KServeServer, ServedModel, StartServer, free_port

pytestmark = pytest.mark.integration
SHAPE = (1, 32, 32)
# The server runs the same ONNX file with the same onnxruntime release, on the same CPU.
ATOL = 1e-6


@pytest.fixture(scope="module")
def server(kserve_server_factory: StartServer, digits_onnx: ConvertedModel) -> KServeServer:
    return kserve_server_factory([ServedModel("digits", digits_onnx.path)])


@pytest.fixture(scope="module")
def local(digits_onnx: ConvertedModel) -> Backend:
    """The same ONNX model run in-process: the reference for the server's answers."""
    backend = create_backend("onnxruntime")
    backend.load(digits_onnx.manifest)
    return backend


def _url(server: KServeServer, protocol: str) -> str:
    return server.http_url if protocol == "http" else server.grpc_url


@pytest.fixture(params=["http", "grpc"])
def remote(
    request: pytest.FixtureRequest, server: KServeServer, digits_manifest: ModelManifest
) -> Iterator[Backend]:
    protocol = str(request.param)
    options = BackendOptions(extra={"protocol": protocol, "url": _url(server, protocol)})
    backend = create_backend("triton", options)
    backend.load(digits_manifest)
    yield backend
    backend.close()


def _batch(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, *SHAPE)).astype(np.float32)


def test_sync_predict_matches_local_onnxruntime(remote: Backend, local: Backend) -> None:
    for n in (1, 3):
        batch = _batch(n, seed=n)
        got = remote.predict(batch)
        assert got.shape == (n, 10)
        np.testing.assert_allclose(got, local.predict(batch), atol=ATOL)


def test_async_predict_completes_every_request(remote: Backend, local: Backend) -> None:
    assert remote.asynchronous is True
    batches = [_batch(2, seed=i) for i in range(6)]
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []
    done = threading.Semaphore(0)

    def callback_for(index: int):  # type: ignore[no-untyped-def]
        def callback(out: np.ndarray | None, error: BaseException | None) -> None:
            if error is not None:
                errors.append(error)
            else:
                assert out is not None
                results[index] = out
            done.release()

        return callback

    # All six are in flight before any is awaited: predict_async must not block.
    for i, batch in enumerate(batches):
        remote.predict_async(batch, callback_for(i))  # type: ignore[attr-defined]
    for _ in batches:
        assert done.acquire(timeout=30), "a callback never came"
    assert errors == []
    for i, batch in enumerate(batches):
        np.testing.assert_allclose(results[i], local.predict(batch), atol=ATOL)


def test_async_error_reaches_the_callback(remote: Backend) -> None:
    outcome: list[tuple[np.ndarray | None, BaseException | None]] = []
    done = threading.Event()

    def callback(out: np.ndarray | None, error: BaseException | None) -> None:
        outcome.append((out, error))
        done.set()

    wrong = np.zeros((1, 1, 16, 16), dtype=np.float32)  # the model takes 32x32
    remote.predict_async(wrong, callback)  # type: ignore[attr-defined]
    assert done.wait(timeout=30)
    ((out, error),) = outcome
    assert out is None and error is not None


def test_describe_records_the_server(remote: Backend) -> None:
    info = remote.describe()
    assert info["server"].startswith("mlserver ")
    assert info["model_name"] == "digits"
    if info["protocol"] == "http":
        assert info["binary_data"] is False  # MLServer needs JSON tensors from tritonclient.http


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_unknown_model_is_unavailable(
    protocol: str, server: KServeServer, digits_manifest: ModelManifest
) -> None:
    options = BackendOptions(
        extra={"protocol": protocol, "url": _url(server, protocol), "model_name": "nosuch"}
    )
    with pytest.raises(BackendUnavailable, match="model_name: 'nosuch'"):
        create_backend("triton", options).load(digits_manifest)


def test_nothing_listening_is_unavailable(digits_manifest: ModelManifest) -> None:
    options = BackendOptions(extra={"url": f"127.0.0.1:{free_port()}", "timeout_s": 2})
    with pytest.raises(BackendUnavailable, match="url: no KServe-V2 server answers http"):
        create_backend("triton", options).load(digits_manifest)


def test_bad_protocol_lists_the_accepted_ones(digits_manifest: ModelManifest) -> None:
    with pytest.raises(
        BackendError, match="protocol: 'rest' is not accepted; accepted: http, grpc"
    ):
        create_backend("triton", BackendOptions(extra={"protocol": "rest"})).load(digits_manifest)


def test_async_after_close_still_calls_back(
    server: KServeServer, digits_manifest: ModelManifest
) -> None:
    backend = create_backend("triton", BackendOptions(extra={"url": server.http_url}))
    backend.load(digits_manifest)
    backend.close()
    outcome: list[BaseException | None] = []
    backend.predict_async(  # type: ignore[attr-defined]
        _batch(1, seed=0), lambda out, error: outcome.append(error)
    )
    assert len(outcome) == 1 and outcome[0] is not None
