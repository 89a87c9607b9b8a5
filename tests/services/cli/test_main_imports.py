"""Every `benchstack` command imports services.cli.main first: no framework may load with
it, or `benchstack token list` pays torch's import (it took 5.1 s instead of 1.4 s here
while one profiling module imported torch for a constant)."""

from __future__ import annotations

import subprocess
import sys

FRAMEWORKS = ("torch", "tensorflow", "keras", "onnxruntime", "tritonclient")


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
