"""benchstack's processes turn numpy's huge-page advice off, unless the user chose.

Each check runs in a fresh interpreter: the advice is process-wide numpy state."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]
# numpy's setter returns the value it replaces: setting True back reads the current one.
READ_ADVICE = "import numpy._core.multiarray as m; print(m._set_madvise_hugepage(True))"


def _advice_after(setup: str, env_switch: str | None = None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if env_switch is not None:
        env["NUMPY_MADVISE_HUGEPAGE"] = env_switch
    result = subprocess.run(
        [sys.executable, "-c", f"{setup}\n{READ_ADVICE}"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_numpy_advises_huge_pages_by_default_here() -> None:
    # Otherwise the checks below would pass without prefer_ordinary_pages doing anything.
    major, minor = (int(part) for part in os.uname().release.split(".")[:2])
    if sys.platform != "linux" or (major, minor) < (4, 6):
        pytest.skip("numpy advises huge pages only on Linux 4.6 and later")
    assert _advice_after("pass") == ["True"]


def test_prefer_ordinary_pages_turns_the_advice_off() -> None:
    setup = "from shared.memory_pages import prefer_ordinary_pages; print(prefer_ordinary_pages())"
    assert _advice_after(setup) == ["True", "False"]


@pytest.mark.parametrize("entry", ["services.cli.main", "services.celery_main"])
def test_the_cli_and_every_worker_start_without_the_advice(entry: str) -> None:
    assert _advice_after(f"import {entry}") == ["False"]


def test_a_users_own_switch_is_left_as_set() -> None:
    setup = "from shared.memory_pages import prefer_ordinary_pages; print(prefer_ordinary_pages())"
    assert _advice_after(setup, env_switch="1") == ["False", "True"]
    assert _advice_after(setup, env_switch="0") == ["True", "False"]
