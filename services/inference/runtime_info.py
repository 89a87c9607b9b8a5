"""What shared.environment cannot see without importing frameworks.

``capture_environment`` stays import-light (the API calls it); the figures below are read
only from frameworks a run already imported, so recording them costs nothing.
"""

from __future__ import annotations

import sys
from typing import Any


def framework_runtime() -> dict[str, Any]:
    """Each backend's runtime facts (its spec's ``runtime_info``, e.g. torch's CUDA and
    cuDNN) for the frameworks this process already loaded; empty when none is loaded."""
    from services.inference.backends import registry

    return {
        spec.name: registry.folder_entry(spec.name, spec.runtime_info)()
        for spec in registry.specs().values()
        if spec.runtime_info is not None
        and spec.probe_module is not None
        and spec.probe_module in sys.modules
    }
