"""What the torch backend records about its runtime with a run (CUDA build, cuDNN, the
devices it sees, its threads); called only when torch is already imported."""

from __future__ import annotations

from typing import Any


def runtime_info() -> dict[str, Any]:
    import torch

    entry: dict[str, Any] = {
        "cuda_build": getattr(torch.version, "cuda", None),
        "cuda_available": bool(torch.cuda.is_available()),
    }
    if entry["cuda_available"]:
        entry["cudnn"] = torch.backends.cudnn.version()
        entry["devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        entry["capability"] = ".".join(map(str, torch.cuda.get_device_capability(0)))
    entry["threads"] = torch.get_num_threads()
    return entry
