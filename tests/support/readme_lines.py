"""README.md's command lines, run as a new user types them, in a virtual environment of theirs.

``readme_lines()`` reads every line of every ``bash`` block before "## The service stack"
(tests/test_readme.py runs that section against its own servers), in order, with its
section heading; comments are dropped. ``ReadmeShell`` runs them one by one through bash:

- with the virtual environment's ``bin`` first on PATH (as ``. venv/bin/activate`` does)
  and nothing else of this machine's Python: no PYTHONPATH, no BENCHSTACK_* settings but
  a data folder of its own;
- the ``pip install`` lines in the repository root, as the README says to; every other
  line in a working folder of the user's, where ``./digits`` and ``./suite`` land;
- with the placeholders a reader fills in filled in from what the earlier lines stored:
  ``3f2a`` (a run id prefix), ``GROUP_OR_RUN`` (a group's id), ``HOST:8001`` (a
  KServe-V2 server's gRPC address), and ``http://HOST:8000`` with ``MODEL_DIR`` (a vLLM
  server's URL and the model folder it serves), and nothing else changed.

``python -m tests.support.readme_lines --venv DIR [--work DIR]`` runs them by hand and
prints each line's time and exit status.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.kserve_server import KServeServer, ServedModel
from tests.support.tiny_llm import tiny_llm
from tests.support.vllm_server import VllmEndpoint, VllmServer, ensure_venv

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
SERVICE_SECTION = "## The service stack"
COMMENT = re.compile(r"\s+#.*$")
# The README's test command: it is what runs this (tests/test_readme_fresh.py).
TEST_COMMAND = "bash scripts/test.sh"
SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
RUN_PREFIX = "3f2a"
GROUP_PLACEHOLDER = "GROUP_OR_RUN"
TRITON_PLACEHOLDER = "HOST:8001"
VLLM_URL_PLACEHOLDER = "http://HOST:8000"
VLLM_MODEL_PLACEHOLDER = "MODEL_DIR"
# The model the Triton line's server serves: what the README's convert line wrote.
CONVERTED = "onnx/resnet50-1.0.0.onnx"
SERVED_NAME = "resnet50"


@dataclass(frozen=True)
class ReadmeLine:
    section: str
    text: str

    @property
    def installs(self) -> bool:
        return " pip install" in f" {self.text}"


def readme_lines(readme: Path = README) -> list[ReadmeLine]:
    """Every command line of the README before its service section, in order."""
    text = readme.read_text().split(SERVICE_SECTION, 1)[0]
    lines: list[ReadmeLine] = []
    section = ""
    for part in re.split(r"(```bash\n.*?```)", text, flags=re.S):
        if not part.startswith("```bash"):
            headings = [h for h in part.splitlines() if h.startswith("#")]
            section = headings[-1].lstrip("# ") if headings else section
            continue
        for raw in part.splitlines()[1:-1]:
            line = COMMENT.sub("", raw).strip()
            if line and not line.startswith("#") and line != TEST_COMMAND:
                lines.append(ReadmeLine(section, line))
    return lines


def user_env(venv: Path, data_dir: Path) -> dict[str, str]:
    """A shell of a user who activated ``venv``: none of this process's Python settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("BENCHSTACK_", "PYTHON", "VIRTUAL_ENV", "PIP_REQUIRE"))
    }
    # The venv's bin and the system's, nothing else: this machine's own Python (pyenv's
    # shims, its `benchstack` with every extra) must not stand in for a missing install.
    env["PATH"] = os.pathsep.join([str(venv / "bin"), *SYSTEM_PATH])
    env["VIRTUAL_ENV"] = str(venv)
    env["BENCHSTACK_DATA_DIR"] = str(data_dir)
    env["COLUMNS"] = "200"  # wide enough that run ids are not cut in tables
    return env


@dataclass
class Ran:
    line: str
    command: str
    returncode: int
    seconds: float
    output: str


@dataclass
class ReadmeShell:
    """Runs README lines in a user's environment; keeps what each printed."""

    venv: Path
    work: Path
    data_dir: Path
    triton_address: Callable[[], str] | None = None
    vllm_endpoint: Callable[[], VllmEndpoint] | None = None
    ran: list[Ran] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        self.env = user_env(self.venv, self.data_dir)

    def benchstack_json(self, *args: str) -> object:
        out = subprocess.run(
            ["benchstack", *args, "--json"],
            env=self.env,
            cwd=self.work,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
        return json.loads(out)

    def _stored_runs(self) -> list[dict[str, object]]:
        runs = self.benchstack_json("results", "--limit", "200")
        assert isinstance(runs, list)
        return runs

    def newest_run_prefix(self) -> str:
        runs = self._stored_runs()
        assert runs, f"{RUN_PREFIX}: no stored run to stand for it yet"
        return str(runs[0]["run_id"])[:8]

    def newest_group(self) -> str:
        for run in self._stored_runs():
            report = self.benchstack_json("show", str(run["run_id"]))
            assert isinstance(report, dict)
            group = report.get("group") or {}
            if group.get("id"):
                return str(group["id"])
        raise AssertionError(f"{GROUP_PLACEHOLDER}: no stored run belongs to a group yet")

    def command_for(self, line: str) -> str:
        """The line with the placeholders a reader fills in filled in."""
        if RUN_PREFIX in line.split():
            line = re.sub(rf"\b{RUN_PREFIX}\b", self.newest_run_prefix(), line)
        if GROUP_PLACEHOLDER in line:
            line = line.replace(GROUP_PLACEHOLDER, self.newest_group())
        if TRITON_PLACEHOLDER in line:
            assert self.triton_address is not None, f"{line}: no KServe-V2 server for it"
            line = line.replace(TRITON_PLACEHOLDER, self.triton_address())
        if VLLM_URL_PLACEHOLDER in line:
            assert self.vllm_endpoint is not None, f"{line}: no vLLM server for it"
            endpoint = self.vllm_endpoint()
            line = line.replace(VLLM_URL_PLACEHOLDER, endpoint.url)
            line = re.sub(rf"\b{VLLM_MODEL_PLACEHOLDER}\b", str(endpoint.model_dir), line)
        return line

    def run(self, readme_line: ReadmeLine, timeout_s: float = 1200) -> Ran:
        command = self.command_for(readme_line.text)
        started = time.monotonic()
        result = subprocess.run(
            ["bash", "-c", command],
            cwd=REPO if readme_line.installs else self.work,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        ran = Ran(
            readme_line.text,
            command,
            result.returncode,
            time.monotonic() - started,
            result.stdout + result.stderr,
        )
        self.ran.append(ran)
        return ran


class ServedConversion:
    """A KServe-V2 server (the protocol Triton speaks; MLServer here) serving the README's
    converted model, started the first time the Triton line asks for its address."""

    def __init__(self, work: Path, scratch: Path) -> None:
        self.work = work
        self.scratch = scratch
        self.server: KServeServer | None = None

    def address(self) -> str:
        if self.server is None:
            model = self.work / CONVERTED
            assert model.is_file(), f"{CONVERTED}: the README's convert line made none"
            self.scratch.mkdir(parents=True, exist_ok=True)
            self.server = KServeServer([ServedModel(SERVED_NAME, model)], self.scratch)
            self.server.start()
        return self.server.grpc_url

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


class ServedLlm:
    """The vLLM server the README tells a user to start (tests/support/vllm_server.py)
    serving the tiny Llama, started the first time a line asks for it."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.server: VllmServer | None = None

    def endpoint(self) -> VllmEndpoint:
        if self.server is None:
            ensure_venv()  # scripts/test.sh has built it: kept as it is
            self.scratch.mkdir(parents=True, exist_ok=True)
            self.server = VllmServer(tiny_llm(self.scratch / "model", seed=58), self.scratch)
            self.server.start()
        return self.server.endpoint

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


def new_venv(folder: Path) -> Path:
    """A virtual environment with nothing but the interpreter (and pip)."""
    if folder.exists():
        shutil.rmtree(folder)
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=300)
    return folder


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, required=True, help="made anew unless --reuse")
    parser.add_argument("--work", type=Path, default=Path("/tmp/benchstack-readme-work"))
    parser.add_argument("--reuse", action="store_true", help="keep the venv's packages")
    parser.add_argument("--from-line", type=int, default=0, help="skip the lines before")
    args = parser.parse_args(argv)
    venv = args.venv if args.reuse else new_venv(args.venv)
    served = ServedConversion(args.work, args.work / "mlserver")
    llm = ServedLlm(args.work / "vllm")
    shell = ReadmeShell(
        venv, args.work, args.work / "benchstack-data", served.address, llm.endpoint
    )
    failed = 0
    try:
        for number, line in enumerate(readme_lines()):
            if number < args.from_line:
                continue
            ran = shell.run(line)
            failed += ran.returncode != 0
            print(
                f"{number:>3} {ran.returncode:>3} {ran.seconds:7.1f} s  {ran.command}", flush=True
            )
            if ran.returncode:
                print(ran.output[-3000:], flush=True)
    finally:
        served.stop()
        llm.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
