"""What a process warmed for bricks has imported before it is timed."""

from __future__ import annotations

import subprocess
import sys


def test_import_namespaces_imports_every_namespace_a_brick_may_name() -> None:
    # A fresh interpreter: this one's test session may have imported torchvision already.
    code = (
        "import sys\n"
        "from services.workloads.bricks.fx_allow import import_namespaces, resolve_function\n"
        "before = 'torchvision.ops' in sys.modules\n"
        "import_namespaces()\n"
        "print(before, 'torchvision.ops' in sys.modules,"
        " resolve_function('torchvision.ops.stochastic_depth').__name__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.split() == ["False", "True", "stochastic_depth"]
