"""Capture of the machine and software a run happened on, recorded with every run."""

from __future__ import annotations

import os
import platform
import re
import sys
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil

from shared.frameworks import catalogue
from shared.package_version import __version__

# Packages whose versions matter for any figure, besides each backend's framework (its
# config.py names those); every installed package is recorded too.
HARNESS_PACKAGES = ("numpy", "pillow", "mlcommons-loadgen")


def key_packages() -> tuple[str, ...]:
    # Each backend's framework packages, as its folder declares them (shared/frameworks.py).
    return (*catalogue().recorded_packages(), *HARNESS_PACKAGES)


def _proc_cpuinfo() -> tuple[str, list[str]] | None:
    """(model, flags) from Linux's /proc/cpuinfo; None where there is none or it lacks them."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            if fields:
                break  # the first processor's block is enough: all cores are alike here
            continue
        fields.setdefault(key.strip(), value.strip())
    model = fields.get("model name") or fields.get("Processor") or fields.get("cpu model")
    if not model:
        return None
    flags = (fields.get("flags") or fields.get("Features") or "").split()
    return model, flags


@lru_cache(maxsize=1)
def cpu_info() -> dict[str, Any]:
    """The CPU as the run saw it. Read from /proc/cpuinfo where there is one: py-cpuinfo
    starts a second interpreter and times the clock, 1.3 s of CPU here, which a run paid in
    each measurement child (the null backend's 0.1 s run took 2 s)."""
    info: dict[str, Any] = {
        "architecture": platform.machine(),
        "physical_cores": psutil.cpu_count(logical=False),
        "logical_cores": psutil.cpu_count(logical=True),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
    }
    found = _proc_cpuinfo()
    if found is not None:
        model, flags = found
    else:
        try:
            import cpuinfo

            details = cpuinfo.get_cpu_info()
            model, flags = details.get("brand_raw", ""), list(details.get("flags", []))
        except Exception:  # py-cpuinfo can fail on unusual kernels; the model then is unknown
            model, flags = platform.processor(), []
    info["model"] = model
    info["flags"] = sorted(f for f in flags if f.startswith(("avx", "amx")))
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
    """Every installed distribution's version (a copy: callers may change theirs)."""
    return dict(_package_versions())


@lru_cache(maxsize=1)
def _package_versions() -> dict[str, str]:
    # Read once per process: a package installed while a worker runs is not what that
    # worker imported anyway.
    versions: dict[str, str] = {}
    for dist in metadata.distributions():
        found = name_and_version(dist)
        if found is not None:
            versions[found[0].lower().replace("_", "-")] = found[1]
    return dict(sorted(versions.items()))


_HEADER_FIELD = re.compile(r"^(Name|Version):[ \t]*(.*?)[ \t]*$", re.MULTILINE)


def name_and_version(dist: metadata.Distribution) -> tuple[str, str] | None:
    """A distribution's name and version from the headers of its metadata file, or None
    when it has no name. ``dist.metadata`` runs the whole file through the email parser:
    0.28 s for 237 distributions on a 2-core host, in every process that records a run."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    headers = text.replace("\r\n", "\n").split("\n\n", 1)[0]  # the body follows a blank line
    fields: dict[str, str] = {}
    for match in _HEADER_FIELD.finditer(headers):
        fields.setdefault(match.group(1), match.group(2))
    name = fields.get("Name")
    return (name, fields.get("Version", "")) if name else None


def warm_caches() -> None:
    """Read what does not change while a process lives (CPU, packages), so processes
    forked from this one (the measurement children) inherit it instead of reading it."""
    capture_environment(all_packages=False)


def capture_environment(*, all_packages: bool = True) -> dict[str, Any]:
    packages = package_versions()
    return {
        "benchstack": __version__,
        "hostname": platform.node(),
        "os": f"{platform.system()} {platform.release()}",
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "cpu": dict(cpu_info()),
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
