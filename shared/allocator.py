"""Whether a measuring process keeps the memory it frees: a setting, applied and recorded.

PyTorch on a CPU takes each activation from the C library's malloc and frees it after the
next layer. With glibc's defaults, a freed block at the top of the heap beyond 128 KiB is
handed back to the kernel, and blocks above a threshold that adapts up to 32 MiB are
mapped afresh on each allocation: the next inference touches new pages and pays a page
fault per 4 KiB. Measured here (one thread, 224 px, batch 1): mobilenet_v2 took 2,621
minor faults per inference and 17.9 ms, against none and 13.9 ms when freed memory was
kept; efficientnet_b0 6,231 faults, 27.0 ms against 20.3 ms; resnet18 none either way.
So a depthwise net's figure described the allocator as much as the model, a layer-by-layer
construction (DLBricks) under-predicted it by a fifth, and ONNX Runtime, with its own
arena, was compared against a PyTorch that paid for page faults.

``keep`` (the default) raises glibc's trim threshold and fixes its mmap threshold at the
most glibc accepts, through ``mallopt`` in the measuring process itself: freed memory
stays with the process and is reused, as jemalloc or tcmalloc would. The process's
resident memory then stays at its peak; its address space grows no further (no top pad),
so a memory limit (RLIMIT_AS) holds as before. ``release`` leaves glibc as it started.
A user who tunes malloc with ``MALLOC_*`` variables (or preloads another allocator)
keeps that tuning: nothing is changed and the variables are recorded instead.
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
from typing import Literal

Allocator = Literal["keep", "release"]
ALLOCATORS: tuple[Allocator, ...] = ("keep", "release")

# mallopt's parameters (malloc.h) and the values "keep" sets.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# The largest trim threshold mallopt takes (an int): freed memory is never handed back.
_KEEP_TRIM_THRESHOLD = 2**31 - 1
# glibc refuses an mmap threshold above HEAP_MAX_SIZE / 2, 32 MiB on 64-bit machines.
_KEEP_MMAP_THRESHOLD = 32 * 2**20

# What this process's allocator was set to, once set (a process sets it once).
_applied: dict[str, str] | None = None


def _user_tuning() -> dict[str, str]:
    """MALLOC_* variables and a preloaded allocator, as the user set them."""
    tuned = {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")}
    if os.environ.get("LD_PRELOAD"):
        tuned["LD_PRELOAD"] = os.environ["LD_PRELOAD"]
    return tuned


def _mallopt(parameter: int, value: int) -> bool:
    # The process's own symbols, libc's among them: find_library would run ldconfig.
    process = ctypes.CDLL(None)
    return bool(process.mallopt(ctypes.c_int(parameter), ctypes.c_int(value)))


def use_allocator(choice: Allocator) -> dict[str, str]:
    """Set this process's allocator as ``choice`` asks (once; later calls return what was
    set) and return the record a run stores (report ``host.allocator``)."""
    global _applied
    if choice not in ALLOCATORS:
        raise ValueError(f"allocator: {choice!r}; accepted: {', '.join(ALLOCATORS)}")
    if _applied is not None:
        return dict(_applied)
    record = {"choice": choice, "library": "-".join(platform.libc_ver()) or "unknown"}
    user = _user_tuning()
    if user:
        record["applied"] = "the user's tuning, left as set: " + ", ".join(
            f"{k}={v}" for k, v in sorted(user.items())
        )
    elif choice == "release":
        record["applied"] = "the C library's defaults (freed memory goes back to the kernel)"
    elif not record["library"].startswith("glibc"):
        record["applied"] = f"nothing: mallopt tuning is glibc's, this is {record['library']}"
    elif _mallopt(_M_TRIM_THRESHOLD, _KEEP_TRIM_THRESHOLD) and _mallopt(
        _M_MMAP_THRESHOLD, _KEEP_MMAP_THRESHOLD
    ):
        record["applied"] = (
            f"freed memory kept: M_TRIM_THRESHOLD={_KEEP_TRIM_THRESHOLD}, "
            f"M_MMAP_THRESHOLD={_KEEP_MMAP_THRESHOLD}"
        )
    else:
        record["applied"] = "nothing: glibc's mallopt refused the settings"
    _applied = record
    return dict(record)


def minor_page_faults() -> int:
    """Minor page faults this process has taken so far (pages the kernel had to map)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
