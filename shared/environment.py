"""Capture of the machine and software a run happened on, recorded with every run."""

from __future__ import annotations

import os
import platform
import sys
from functools import lru_cache
from importlib import metadata
from typing import Any

import psutil

from shared.version import __version__

# Packages whose versions matter for any figure, besides each backend's framework (its
# config.py names those); every installed package is recorded too.
HARNESS_PACKAGES = ("numpy", "pillow", "mlcommons-loadgen")


def key_packages() -> tuple[str, ...]:
    # Imported here: the backends' specs are light, but shared/ modules import nothing
    # from services/ at import time.
    from services.inference.backends.registry import recorded_packages

    return (*recorded_packages(), *HARNESS_PACKAGES)


@lru_cache(maxsize=1)
def cpu_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "architecture": platform.machine(),
        "physical_cores": psutil.cpu_count(logical=False),
        "logical_cores": psutil.cpu_count(logical=True),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
    }
    try:
        import cpuinfo

        details = cpuinfo.get_cpu_info()
        info["model"] = details.get("brand_raw", "")
        info["flags"] = sorted(f for f in details.get("flags", []) if f.startswith(("avx", "amx")))
    except Exception:  # py-cpuinfo can fail on unusual kernels; the model then is unknown
        info["model"] = platform.processor()
    return info


def gpu_info() -> list[dict[str, Any]]:
    """GPUs via NVML when present; an empty list on machines without an NVIDIA driver."""
    try:
        import pynvml
    except ImportError:
        return []
    try:
        pynvml.nvmlInit()
    except Exception:
        return []
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()
        gpus = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
            gpus.append(
                {
                    "index": index,
                    "name": pynvml.nvmlDeviceGetName(handle),
                    "memory_bytes": int(memory.total),
                    "driver": driver,
                    "cuda_driver": f"{cuda // 1000}.{(cuda % 1000) // 10}",
                }
            )
        return gpus
    finally:
        pynvml.nvmlShutdown()


def package_versions() -> dict[str, str]:
    versions: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            versions[name.lower().replace("_", "-")] = dist.version
    return dict(sorted(versions.items()))


def capture_environment(*, all_packages: bool = True) -> dict[str, Any]:
    packages = package_versions()
    return {
        "benchstack": __version__,
        "hostname": platform.node(),
        "os": f"{platform.system()} {platform.release()}",
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "cpu": cpu_info(),
        "memory_bytes": psutil.virtual_memory().total,
        "gpus": gpu_info(),
        "frameworks": {name: packages[name] for name in key_packages() if name in packages},
        "packages": packages if all_packages else {},
        "env": {
            k: v
            for k, v in os.environ.items()
            if k.startswith(("OMP_", "MKL_", "OPENBLAS_", "CUDA_VISIBLE"))
        },
    }
