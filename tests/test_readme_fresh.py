"""A fresh machine runs every README line: the README as a new user types it, in a virtual
environment that starts with nothing but the interpreter.

Once 1150 tests passed while the Quick start's first command died on a fresh machine (an
import of a package only the `stack` extra installs) and every TensorFlow run crashed:
the suite ran in an environment holding every extra, in one import order. Here:

- the Quick start's first line runs verbatim in the empty environment (``.[torch]`` only)
  and must print a VALID run;
- then every later line before the service section, in order, as written (the ``.[all]``
  install line included), with only the placeholders a reader fills in filled in
  (tests/support/readme_lines.py says which); the service section is
  tests/test_readme.py's;
- a wheel built with ``pip wheel .`` replaces the editable install there and, run from
  outside the repository, runs the core commands; in another empty environment, with
  ``[stack]`` only, it migrates a database and serves the web UI: package data included.

Slow by nature (two environments, about 40 lines): the README's lines choose short
durations themselves.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.ephemeral import free_port
from tests.support.readme_lines import (
    CONVERTED,
    REPO,
    TRITON_PLACEHOLDER,
    ReadmeLine,
    ReadmeShell,
    ServedConversion,
    ServedLlm,
    new_venv,
    readme_lines,
    user_env,
)

# Installs and README lines take minutes each; the first test's fixture makes the venv.
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(1500)]

LINES = readme_lines()
QUICK_START, LATER_LINES = LINES[0], LINES[1:]


def _line_id(line: ReadmeLine) -> str:
    return re.sub(r"\s+", " ", line.text)[:70]


@pytest.fixture(scope="module")
def user(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReadmeShell]:
    root = tmp_path_factory.mktemp("readme-fresh")
    served = ServedConversion(root / "work", root / "mlserver")
    llm = ServedLlm(root / "vllm")
    shell = ReadmeShell(
        new_venv(root / "venv"),
        root / "work",
        root / "benchstack-data",
        served.address,
        llm.endpoint,
    )
    try:
        yield shell
    finally:
        served.stop()
        llm.stop()
        shutil.rmtree(root / "venv", ignore_errors=True)  # several GB once .[all] is in


def _pip_list(venv: Path) -> set[str]:
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return {p["name"].lower() for p in json.loads(listed)}


def test_the_environment_starts_with_nothing_but_the_interpreter(user: ReadmeShell) -> None:
    assert _pip_list(user.venv) <= {"pip", "setuptools"}, _pip_list(user.venv)


def test_the_quick_start_runs_as_written_and_prints_a_valid_run(user: ReadmeShell) -> None:
    assert QUICK_START.section == "Quick start", QUICK_START
    assert QUICK_START.text.startswith('python3 -m pip install -e ".[torch]" && benchstack bench')
    ran = user.run(QUICK_START)
    assert ran.returncode == 0, ran.output[-4000:]
    # The venv's own command ran, not one from elsewhere on this machine.
    assert shutil.which("benchstack", path=user.env["PATH"]) == str(
        user.venv / "bin" / "benchstack"
    )
    assert re.search(r"validity\s+│\s+VALID\b", ran.output), ran.output[-4000:]
    # Only the torch extra: none of the stack's packages came with it.
    assert not {"celery", "strawberry-graphql", "opentelemetry-sdk"} & _pip_list(user.venv)


@pytest.mark.parametrize("line", LATER_LINES, ids=_line_id)
def test_each_later_readme_line_runs_as_written(user: ReadmeShell, line: ReadmeLine) -> None:
    if TRITON_PLACEHOLDER in line.text and not (user.work / CONVERTED).is_file():
        pytest.fail(f"{line.text}: the README's convert line must come before it")
    ran = user.run(line)
    assert ran.returncode == 0, f"$ {ran.command}\n{ran.output[-4000:]}"
    assert "Traceback (most recent call last)" not in ran.output, ran.output[-4000:]


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return int(response.status), response.read()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel ``pip wheel .`` builds."""
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), "."],
        cwd=REPO,
        check=True,
        timeout=600,
    )
    (built,) = dist.glob("benchstack-*.whl")
    return built


def _outside(venv: Path, tmp_path: Path, *commands: str) -> list[str]:
    """Run each command in a folder outside the repository; each must exit 0."""
    env = user_env(venv, tmp_path / "data")
    outside = tmp_path / "elsewhere"
    outside.mkdir(exist_ok=True)
    printed = []
    for command in commands:
        ran = subprocess.run(
            ["bash", "-c", command], cwd=outside, env=env, capture_output=True, text=True,
            timeout=600,
        )  # fmt: skip
        assert ran.returncode == 0, f"$ {command}\n{ran.stdout[-3000:]}{ran.stderr[-3000:]}"
        printed.append(ran.stdout)
    return printed


def test_the_wheel_not_editable_runs_the_core_commands_from_outside_the_repository(
    user: ReadmeShell, wheel: Path, tmp_path: Path
) -> None:
    # In the README's environment, after its lines: benchstack itself from the wheel, not
    # from the repository (``pip install .``); the dependencies are the README's.
    subprocess.run(
        [str(user.venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps",
         "--force-reinstall", str(wheel)],
        check=True, timeout=600,
    )  # fmt: skip
    where, *_ = _outside(
        user.venv,
        tmp_path,
        "python -c 'import services; print(services.__file__)'",
        "benchstack models | grep -q resnet18",
        "benchstack bench resnet18 -s single-stream --duration 1 --samples 8",
        "benchstack digits prepare --output ./digits --epochs 1",
        "benchstack bench ./digits/digits_cnn.yaml --dataset ./digits/data/test --duration 1",
        "benchstack profile resnet18 --trace-level framework --iterations 2",
        "benchstack train resnet18 --steps 3 --warmup 1 --batch-size 4 --image-size 32",
        "benchstack results",
    )
    assert where.startswith(str(user.venv / "lib")), where


def test_the_wheel_in_an_empty_environment_migrates_and_serves_the_web_ui(
    wheel: Path, tmp_path: Path
) -> None:
    # The service stack's install, without any framework: package data (migrations, web
    # UI) from the wheel, run from outside the repository.
    venv = new_venv(tmp_path / "venv")
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"{wheel}[stack]"],
        cwd=tmp_path,
        check=True,
        timeout=900,
    )
    env = user_env(venv, tmp_path / "data")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    _outside(venv, tmp_path, "benchstack db upgrade")
    port = free_port()
    api = subprocess.Popen(
        ["benchstack", "api", "--port", str(port)],
        cwd=outside,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                status, page = _get(f"http://127.0.0.1:{port}/")
                break
            except OSError:
                assert api.poll() is None, api.communicate()[0]
                assert time.monotonic() < deadline, "the API did not answer in 120 s"
                time.sleep(0.5)
        assert status == 200 and b"<html" in page.lower()
        scripts = re.findall(rb'src="(/static/[^"]+)"', page)
        assert scripts, page[:2000]
        for script in scripts:
            assert _get(f"http://127.0.0.1:{port}{script.decode()}")[0] == 200, script
        assert _get(f"http://127.0.0.1:{port}/readyz")[0] == 200
    finally:
        api.terminate()
        api.wait(timeout=30)
