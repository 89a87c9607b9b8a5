"""Dockerfile and .dockerignore: parse with BuildKit's own parser and check the essentials.

No Docker engine runs here, so nothing is built; the `dockerfile` package wraps the
official Go parser, which rejects what `docker build` would reject at parse time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dockerfile
import pytest

from_args = re.compile(r"^(?P<image>\S+)(?:\s+AS\s+(?P<stage>\S+))?$", re.IGNORECASE)


@dataclass(frozen=True)
class Stage:
    image: str
    name: str | None
    instructions: list[Any]


def stages(commands: tuple[Any, ...]) -> tuple[dict[str, str], list[Stage]]:
    """Split parsed instructions into global ARG defaults and build stages."""
    global_args: dict[str, str] = {}
    result: list[Stage] = []
    for command in commands:
        if command.cmd == "FROM":
            match = from_args.match(" ".join(command.value))
            assert match, command.original
            result.append(Stage(match["image"], match["stage"], []))
        elif result:
            result[-1].instructions.append(command)
        elif command.cmd == "ARG":
            for arg in command.value:
                name, _, default = arg.partition("=")
                global_args[name] = default
    return global_args, result


def final_user(stage: Stage) -> str | None:
    users = [command.value[0] for command in stage.instructions if command.cmd == "USER"]
    return users[-1] if users else None


def is_root(user: str | None) -> bool:
    # No USER at all means root; so do "root", "0", "root:root" and "0:0".
    return user is None or user.split(":")[0] in ("root", "0")


def stage_args(stage: Stage) -> dict[str, str]:
    args: dict[str, str] = {}
    for command in stage.instructions:
        if command.cmd == "ARG":
            for arg in command.value:
                name, _, default = arg.partition("=")
                args[name] = default
    return args


KNOWN_INSTRUCTIONS = frozenset(
    {
        *("ADD", "ARG", "CMD", "COPY", "ENTRYPOINT", "ENV", "EXPOSE", "FROM", "HEALTHCHECK"),
        *("LABEL", "MAINTAINER", "ONBUILD", "RUN", "SHELL", "STOPSIGNAL", "USER", "VOLUME"),
        "WORKDIR",
    }
)


def lint_problems(commands: tuple[Any, ...]) -> list[str]:
    """What `docker build` would reject after parsing; the Go parser itself is lenient."""
    problems = []
    seen_stages: set[str] = set()
    first = next((c for c in commands if c.cmd != "ARG"), None)
    if first is None or first.cmd != "FROM":
        problems.append("the first instruction after global ARGs must be FROM")
    for command in commands:
        where = f"line {command.start_line}: {command.original}"
        if command.cmd not in KNOWN_INSTRUCTIONS:
            problems.append(f"{where}: unknown instruction")
        elif not command.value:
            problems.append(f"{where}: missing arguments")
        elif command.cmd in ("CMD", "ENTRYPOINT", "RUN", "SHELL") and not command.json:
            # Broken JSON silently becomes shell form; SHELL has no shell form at all.
            rest = command.original.split(None, 1)[1] if " " in command.original else ""
            if command.cmd == "SHELL" or rest.lstrip().startswith("["):
                problems.append(f"{where}: not a valid JSON array")
        match = from_args.match(" ".join(command.value)) if command.cmd == "FROM" else None
        if match and match["stage"]:
            seen_stages.add(match["stage"].lower())
        for flag in command.flags:
            if flag.startswith("--from=") and command.cmd == "COPY":
                source = flag.removeprefix("--from=").lower()
                if source not in seen_stages and ":" not in source and "/" not in source:
                    problems.append(f"{where}: no earlier stage named {source!r}")
    return problems


def excluded(path: str, patterns: list[str]) -> bool:
    """Whether `docker build` leaves `path` out of the context (.dockerignore semantics:
    last matching pattern wins, "!" re-includes, a pattern matching a folder covers all
    inside it)."""
    parts = path.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    result = False
    for raw in patterns:
        negate = raw.startswith("!")
        pattern = raw.removeprefix("!").strip("/")
        regex = re.compile(_glob_to_regex(pattern))
        if any(regex.fullmatch(candidate) for candidate in candidates):
            result = not negate
    return result


def _glob_to_regex(pattern: str) -> str:
    # "**" spans folders; "*" and "?" stay within one path segment (Go's filepath.Match).
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (close := pattern.find("]", i + 1)) != -1:
            body = pattern[i + 1 : close]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = close + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


# --- fixtures --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def parsed(repo_root: Path) -> tuple[dict[str, str], list[Stage]]:
    return stages(dockerfile.parse_file(str(repo_root / "Dockerfile")))


@pytest.fixture(scope="module")
def final_stage(parsed: tuple[dict[str, str], list[Stage]]) -> Stage:
    return parsed[1][-1]


@pytest.fixture(scope="module")
def ignore_patterns(repo_root: Path) -> list[str]:
    lines = (repo_root / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


# --- Dockerfile ------------------------------------------------------------------------


def test_dockerfile_has_no_problems(repo_root: Path) -> None:
    assert lint_problems(dockerfile.parse_file(str(repo_root / "Dockerfile"))) == []


@pytest.mark.parametrize(
    "text",
    [
        "FROM x\nRUN <<EOF\necho\n",  # the parser itself refuses an open heredoc
        "FROM x\nUSER\n",
        "FROM x\nRUNN echo\n",
        'FROM x\nENTRYPOINT ["benchstack"\n',
        "FROM x\nCOPY --from=builder /opt/venv /opt/venv\n",
        "RUN echo\nFROM x\n",
    ],
)
def test_broken_dockerfiles_are_caught(text: str) -> None:
    try:
        commands = dockerfile.parse_string(text)
    except dockerfile.GoParseError:
        return
    assert lint_problems(commands), text


def test_base_image_is_python_slim_by_default(
    parsed: tuple[dict[str, str], list[Stage]],
) -> None:
    global_args, all_stages = parsed
    assert global_args["BASE_IMAGE"].startswith("python:3.11-slim")
    # Every stage builds on BASE_IMAGE, so the GPU image only swaps that one argument.
    roots = {stage.image for stage in all_stages} - {s.name for s in all_stages if s.name}
    assert roots == {"${BASE_IMAGE}"}


def test_final_stage_runs_as_non_root(final_stage: Stage) -> None:
    user = final_user(final_stage)
    assert not is_root(user), f"final stage runs as {user!r}"
    # k8s/ sets runAsUser to the same uid; runAsNonRoot needs it numeric to verify.
    assert user == "10001:10001"


def test_root_detection() -> None:
    _, (stage,) = stages(dockerfile.parse_string("FROM x\nUSER app\nUSER 0:0\n"))
    assert is_root(final_user(stage))
    _, (stage,) = stages(dockerfile.parse_string("FROM x\n"))
    assert is_root(final_user(stage))


def test_entrypoint_is_benchstack_in_exec_form(final_stage: Stage) -> None:
    (entrypoint,) = [c for c in final_stage.instructions if c.cmd == "ENTRYPOINT"]
    # Exec form: signals reach benchstack itself, so Celery's warm shutdown works.
    assert entrypoint.json
    assert entrypoint.value == ("benchstack",)


def test_extras_are_a_build_argument(
    parsed: tuple[dict[str, str], list[Stage]], project_extras: set[str]
) -> None:
    _, all_stages = parsed
    (builder,) = [stage for stage in all_stages if "EXTRAS" in stage_args(stage)]
    default = stage_args(builder)["EXTRAS"]
    assert default == "stack,torch"
    assert set(default.split(",")) <= project_extras
    runs = " ".join(" ".join(c.value) for c in builder.instructions if c.cmd == "RUN")
    assert 'pip install ".[${EXTRAS}]"' in runs


# --- .dockerignore ---------------------------------------------------------------------


def test_build_context_has_what_pip_install_reads(
    ignore_patterns: list[str], pyproject: dict[str, Any]
) -> None:
    needed = ["pyproject.toml", "shared/__init__.py", "services/cli/main.py"]
    readme = pyproject["project"].get("readme")
    if isinstance(readme, str):
        needed.append(readme)
    for include in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]:
        needed.append(include.rstrip("*") + "/__init__.py")
    assert [path for path in needed if excluded(path, ignore_patterns)] == []


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".env",
        "services/api/.env",
        ".venv/bin/python",
        "shared/__pycache__/settings.cpython-311.pyc",
        "tests/deploy/test_dockerfile.py",
        "k8s/base/secret.yaml",
        "benchstack.db",
    ],
)
def test_build_context_leaves_out(path: str, ignore_patterns: list[str]) -> None:
    assert excluded(path, ignore_patterns)


def test_ignore_matcher() -> None:
    assert excluded("a/b.pyc", ["**/*.pyc"])
    assert excluded("b.pyc", ["**/*.pyc"])
    assert not excluded("a/b.py", ["**/*.pyc"])
    assert not excluded("src/x.py", ["*", "!src"])
    assert excluded("src/x.pyc", ["*", "!src", "**/*.pyc"])
    assert not excluded("docs/x.md", ["*.md"])
