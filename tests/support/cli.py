"""The CLI as a user runs it from a shell, in a subprocess of this worktree's code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# A two-layer CNN manifest that loads in a blink (tests/fixtures/tiny_cnn.yaml).
TINY = "tests/fixtures/tiny_cnn.yaml"


REPO = Path(__file__).resolve().parents[2]


def embedded_env(data_dir: Path, columns: int = 200) -> dict[str, str]:
    """This process's environment for the embedded mode: its own data folder, no server's
    database or object store, a terminal ``columns`` wide so tables are not cut, and this
    worktree importable."""
    env = {**os.environ, "BENCHSTACK_DATA_DIR": str(data_dir), "COLUMNS": str(columns)}
    for name in ("BENCHSTACK_DATABASE_URL", "BENCHSTACK_S3_ENDPOINT"):
        env.pop(name, None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


def python_code(
    code: str, data_dir: Path, *, cwd: Path = REPO, timeout_s: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python -c code`` in a fresh interpreter, in the embedded mode's environment."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=embedded_env(data_dir),
        cwd=cwd,
        timeout=timeout_s,
    )


def benchstack(
    data_dir: Path, *args: str, columns: int = 200, timeout_s: float = 300
) -> subprocess.CompletedProcess[str]:
    """The CLI in embedded mode (``embedded_env``: its own data folder, no server's
    database or object store, this worktree first on PYTHONPATH), as in a terminal
    ``columns`` wide, so tables are not cut."""
    return subprocess.run(
        [sys.executable, "-m", "services.cli.main", *args],
        capture_output=True,
        text=True,
        env=embedded_env(data_dir, columns),
        timeout=timeout_s,
    )


def piped(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI with stdout and stderr both pipes and no COLUMNS: as under `| less` or in CI."""
    env = {**os.environ, "BENCHSTACK_DATA_DIR": str(data_dir)}
    for name in ("COLUMNS", "BENCHSTACK_DATABASE_URL", "BENCHSTACK_S3_ENDPOINT"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "services.cli.main", *args],
        capture_output=True,  # both pipes: neither is a terminal
        text=True,
        env=env,
        timeout=300,
    )
