"""A real KServe-V2 server (Seldon MLServer) for integration tests of the Triton backend.

MLServer pins versions of fastapi, protobuf and uvloop that clash with the project's own
environment, so it lives in a separate virtualenv at ``.venvs/mlserver`` in the repository
root, built once and reused while its requirements are unchanged. The models are served
by a small custom runtime (``tests/support/mlserver/onnx_runtime.py``) that runs ONNX
files with onnxruntime, and the server runs as its own process on free loopback ports.

    python -m tests.support.kserve_server --prepare   # build the virtualenv only (CI)

In tests, use the session fixture ``kserve_server_factory``::

    server = kserve_server_factory([ServedModel("digits", Path("digits.onnx"))])
    server.http_url, server.grpc_url   # "127.0.0.1:<port>", as tritonclient expects
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_DIR = REPO_ROOT / ".venvs" / "mlserver"
RUNTIME_DIR = Path(__file__).resolve().parent / "mlserver"
RUNTIME_CLASS = "onnx_runtime.OnnxRuntimeModel"
# fastapi, protobuf and uvloop are held back to releases MLServer 1.7 works with;
# onnxruntime matches the project's so both sides run the very same kernels.
REQUIREMENTS = (
    "mlserver==1.7.1",
    "fastapi<0.116",
    "protobuf<7",
    "uvloop==0.21.0",
    "onnxruntime==1.31.1",
    "numpy",
)
_MARKER = ".benchstack-requirements"
STARTUP_TIMEOUT_S = 180.0


class KServeServerError(RuntimeError):
    """The MLServer virtualenv could not be built or the server did not become ready."""


def _venv_bin(name: str) -> Path:
    return VENV_DIR / "bin" / name


def _venv_is_current() -> bool:
    marker = VENV_DIR / _MARKER
    return (
        marker.is_file()
        and marker.read_text() == "\n".join(REQUIREMENTS)
        and _venv_bin("mlserver").is_file()
    )


def ensure_venv() -> Path:
    """Build ``.venvs/mlserver`` unless a build with the same requirements is there.

    Returns the path of its ``mlserver`` executable. A file lock keeps two test processes
    from building it at once; the marker is written last, so a half-built one is redone.
    """
    VENV_DIR.parent.mkdir(parents=True, exist_ok=True)
    with (VENV_DIR.parent / "mlserver.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _venv_is_current():
            shutil.rmtree(VENV_DIR, ignore_errors=True)
            try:
                subprocess.run([sys.executable, "-m", "venv", str(VENV_DIR)], check=True)
                subprocess.run(
                    [
                        str(_venv_bin("python")),
                        "-m",
                        "pip",
                        "install",
                        "--quiet",
                        "--disable-pip-version-check",
                        *REQUIREMENTS,
                    ],
                    check=True,
                )
            except subprocess.CalledProcessError as exc:
                shutil.rmtree(VENV_DIR, ignore_errors=True)
                raise KServeServerError(
                    f"building {VENV_DIR} failed ({exc}); "
                    f"it needs PyPI for: {' '.join(REQUIREMENTS)}"
                ) from exc
            (VENV_DIR / _MARKER).write_text("\n".join(REQUIREMENTS))
    return _venv_bin("mlserver")


def free_port() -> int:
    # The port is free when asked; the tiny race before MLServer binds it is acceptable in tests.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class ServedModel:
    """One ONNX file served under ``name`` by the custom runtime."""

    name: str
    onnx_path: Path


class KServeServer:
    """An MLServer process serving ONNX models on free loopback ports (HTTP and gRPC)."""

    def __init__(self, models: Sequence[ServedModel], workdir: Path) -> None:
        if not models:
            raise ValueError("models: give at least one ServedModel to serve")
        self.models = list(models)
        self.workdir = workdir
        self.http_port = free_port()
        self.grpc_port = free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self._log_path = workdir / "mlserver.log"

    @property
    def http_url(self) -> str:
        return f"127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def _write_repository(self) -> Path:
        repo = self.workdir / "repository"
        repo.mkdir(parents=True, exist_ok=True)
        settings = {
            "host": "127.0.0.1",
            "http_port": self.http_port,
            "grpc_port": self.grpc_port,
            "metrics_port": free_port(),
            # No metrics server and no inference worker pool: one small process is enough
            # for tests and starts in seconds on two cores.
            "metrics_endpoint": None,
            "parallel_workers": 0,
            "load_models_at_startup": True,
            # gRPC's 4 MiB default refuses one batch of 8 ImageNet images (4.8 MB);
            # Triton itself takes up to 2 GiB.
            "grpc_max_message_length": 512 * 1024 * 1024,
        }
        (repo / "settings.json").write_text(json.dumps(settings, indent=2))
        for model in self.models:
            folder = repo / model.name
            folder.mkdir(exist_ok=True)
            model_settings = {
                "name": model.name,
                "implementation": RUNTIME_CLASS,
                "parameters": {"uri": str(model.onnx_path.resolve())},
            }
            (folder / "model-settings.json").write_text(json.dumps(model_settings, indent=2))
        return repo

    def start(self) -> None:
        mlserver = ensure_venv()
        repo = self._write_repository()
        env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
        env["PYTHONPATH"] = str(RUNTIME_DIR)
        with self._log_path.open("wb") as log:
            # A session of its own, so a Ctrl-C in the terminal reaches pytest first and
            # the server is then stopped by stop(), not killed half-way through a request.
            self._process = subprocess.Popen(
                [str(mlserver), "start", str(repo)],
                cwd=self.workdir,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _ready(self, path: str) -> bool:
        try:
            with urllib.request.urlopen(f"http://{self.http_url}{path}", timeout=2) as resp:
                return int(resp.status) == 200
        except (urllib.error.URLError, OSError):
            return False

    def _wait_ready(self) -> None:
        assert self._process is not None
        paths = ["/v2/health/ready", *(f"/v2/models/{m.name}/ready" for m in self.models)]
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise KServeServerError(
                    f"mlserver exited with code {self._process.returncode}:\n{self.log_tail()}"
                )
            if all(self._ready(p) for p in paths):
                return
            time.sleep(0.25)
        raise KServeServerError(
            f"mlserver not ready after {STARTUP_TIMEOUT_S:.0f} s:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 40) -> str:
        if not self._log_path.is_file():
            return "(no log)"
        return "\n".join(self._log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout_s: float = 20.0) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)  # MLServer unloads its models on SIGTERM
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            # Only the session this object started is killed.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=timeout_s)

    def __enter__(self) -> KServeServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


StartServer = Callable[[Sequence[ServedModel]], KServeServer]


@pytest.fixture(scope="session")
def kserve_server_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StartServer]:
    """Start MLServer for a list of models; every server started is stopped at session end."""
    started: list[KServeServer] = []

    def start(models: Sequence[ServedModel]) -> KServeServer:
        server = KServeServer(models, workdir=tmp_path_factory.mktemp("mlserver"))
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--prepare",
        action="store_true",
        help=f"build the MLServer virtualenv at {VENV_DIR} and exit",
    )
    args = parser.parse_args(argv)
    if not args.prepare:
        parser.error("nothing to do; pass --prepare")
    print(f"mlserver ready at {ensure_venv()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
