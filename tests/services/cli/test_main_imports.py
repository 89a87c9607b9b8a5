"""Every `benchstack` command imports services.cli.main first.

- No framework may load with it, or `benchstack token list` pays torch's import (it took
  5.1 s instead of 1.4 s here while one profiling module imported torch for a constant).
- No package of the `stack` extra may be needed by the embedded mode's commands: a user
  who installed `.[torch]` (the Quick start) has none of them, and once every command
  died on `import opentelemetry` there. These tests hide the stack's packages from a
  subprocess and run the core commands in it; tests/test_readme_fresh.py does it for real
  in a virtual environment holding only what the README installs.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import TINY, python_code

REPO = Path(__file__).resolve().parents[3]
FRAMEWORKS = ("torch", "tensorflow", "keras", "onnxruntime", "tritonclient")
# The embedded mode's commands (README: Quick start, Using it, Numbers, Training,
# profiling, DLBricks); each must at least start without the stack's packages.
CORE_COMMANDS = (
    "bench",
    "sweep",
    "find-peak",
    "profile",
    "bricks",
    "train",
    "report",
    "results",
    "show",
    "models",
    "rerun",
    "advise",
    "history",
    "gate",
    "convert",
    "digits",
    "manifest",
)


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _closure(names: set[str]) -> set[str]:
    """``names`` and every distribution they require, as installed here (extras aside)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue
        todo += [_requirement_name(r) for r in requires if "extra ==" not in r]
    return seen


def stack_only_modules() -> list[str]:
    """Top-level modules that only the `stack` extra brings: its packages and what they
    require, less what the core dependencies and the torch extra require."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    core = _closure({_requirement_name(r) for r in project["dependencies"] + extras["torch"]})
    stack = _closure({_requirement_name(r) for r in extras["stack"]}) - core
    modules = {
        module
        for module, distributions in packages_distributions().items()
        if any(d.lower().replace("_", "-") in stack for d in distributions)
        and not module.startswith("_")
    }
    # psycopg2-binary and the OpenTelemetry distributions install under other names;
    # starlette and amqp come with FastAPI and Celery.
    expected = {"celery", "fastapi", "strawberry", "opentelemetry", "psycopg2", "starlette"}
    assert expected | {"amqp"} <= modules, modules
    return sorted(modules)


def _without_stack(code: str) -> str:
    """Python source that hides the stack's modules, then runs ``code``."""
    return (
        "import importlib.abc, sys\n"
        f"HIDDEN = {stack_only_modules()!r}\n"
        "class Hide(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] in HIDDEN:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r} (hidden by the test)')\n"
        "sys.meta_path.insert(0, Hide())\n" + code
    )


def _cli_without_stack(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    code = _without_stack(
        f"sys.argv = ['benchstack', *{list(args)!r}]\nfrom services.cli.main import app\napp()\n"
    )
    return python_code(code, data_dir)


def test_the_cli_entry_point_imports_no_framework() -> None:
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, services.cli.main; "
            f"print(' '.join(m for m in {FRAMEWORKS!r} if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.strip()
    assert loaded == "", f"services.cli.main imported {loaded}"


def test_the_hiding_finder_does_hide_the_stack(tmp_path: Path) -> None:
    # The check below proves something only if a stack import fails under it.
    hidden = subprocess.run(
        [sys.executable, "-c", _without_stack("import opentelemetry.trace")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert hidden.returncode == 1 and "hidden by the test" in hidden.stderr, hidden.stderr


def test_each_core_command_starts_without_the_stack(tmp_path: Path) -> None:
    ran = _cli_steps_without_stack(tmp_path, [[command, "--help"] for command in CORE_COMMANDS])
    assert [step["args"][0] for step in ran] == list(CORE_COMMANDS), "every command ran"
    for step in ran:
        assert step["code"] == 0 and "Usage" in step["out"], (step["args"], step["err"][-3000:])


# Runs each command line in one interpreter, as `benchstack` would one after the other,
# and prints one JSON line per command: its exit code and what it wrote. One interpreter
# for every step, not one each: each start imports torch again (about 5 s of the test's
# minutes), and the hiding finder sees every import of every command all the same.
_STEPS_DRIVER = """
import contextlib, io, json, traceback
from services.cli.main import app
for args in STEPS:
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        sys.argv = ['benchstack', *args]
        try:
            app()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
    print(json.dumps({'args': args, 'code': code, 'out': out.getvalue(), 'err': err.getvalue()}))
"""


def _cli_steps_without_stack(data_dir: Path, steps: list[list[str]]) -> list[dict[str, Any]]:
    ran = python_code(_without_stack(f"STEPS = {steps!r}\n" + _STEPS_DRIVER), data_dir)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return [json.loads(line) for line in ran.stdout.splitlines() if line.startswith("{")]


@pytest.mark.slow
def test_the_embedded_workflows_run_without_the_stack(tmp_path: Path) -> None:
    """Each core command's real work, on the tiny CNN, as the README runs it on real models."""
    bench = _cli_without_stack(
        tmp_path, "bench", TINY, "--framework", "null", "--duration", "0.5", "--json"
    )
    assert bench.returncode == 0, bench.stderr[-3000:]
    run_id = json.loads(bench.stdout)["run_id"]
    short = ["--duration", "0.5", "--samples", "8"]
    steps = [
        ["results"],
        ["show", run_id[:8]],
        ["bench", TINY, "-s", "single-stream", "--repeats", "2", *short],
        ["bench", TINY, "-s", "single-stream", "--trace-level", "full", *short],
        ["sweep", TINY, "--batch-sizes", "1,2", *short],
        ["find-peak", TINY, "--framework", "null", "--latency-bound-ms", "50", "--max-probes", "3",
         "--duration", "0.5"],
        ["advise", "tiny-cnn", "--latency-bound-ms", "50"],
        ["rerun", run_id[:8]],
        ["report", run_id, "--html", str(tmp_path / "r.html"), "--csv", str(tmp_path / "r.csv")],
        ["profile", TINY, "--trace-level", "library", "--iterations", "2",
         "--trace", str(tmp_path / "t.json")],
        ["train", "resnet18", "--steps", "2", "--warmup", "1", "--batch-size", "2",
         "--image-size", "32"],
        ["bricks", "generate", TINY, "-H", "1", "--suite", str(tmp_path / "suite")],
        ["bricks", "run", str(tmp_path / "suite"), "--queries", "5"],
        ["show", run_id[:8]],
    ]  # fmt: skip
    ran = _cli_steps_without_stack(tmp_path, steps)
    assert [r["args"] for r in ran] == steps, "every step ran, in order"
    for step in ran:
        said = f"benchstack {' '.join(step['args'])}\n{step['out'][-2000:]}{step['err'][-3000:]}"
        assert "hidden by the test" not in step["err"], said
        # find-peak exits 1 when no probe was judged within the bound: its own verdict.
        allowed = {0, 1} if step["args"][0] == "find-peak" else {0}
        assert step["code"] in allowed and "Traceback" not in step["err"], said
    assert run_id in ran[-1]["out"]
