"""What the ONNX Runtime backend records about its runtime with a run (its execution
providers); called only when onnxruntime is already imported."""

from __future__ import annotations

from typing import Any


def runtime_info() -> dict[str, Any]:
    import onnxruntime as ort

    return {"providers": list(ort.get_available_providers())}
