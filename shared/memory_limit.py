"""A process's memory limit, and error text that says what ran out.

A worker process that asks for more memory than the machine has is not told so: the
kernel's OOM killer ends some process (perhaps another one) with SIGKILL, and whoever
waited on it learns nothing. A process given an address-space limit (RLIMIT_AS) instead
gets a MemoryError at the allocation that passes it, while the machine stays healthy, and
can say "needed more than N GB". Such an error's own text is often empty (Pillow raises
a bare MemoryError), so ``error_text`` never returns an empty message.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

# The budget ``limit_memory`` gave this process, and the setting that sized it.
_BUDGET: tuple[int, str] | None = None


def mapped_bytes() -> int:
    """This process's address space now (VmSize); 0 where /proc cannot say."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def limit_memory(budget_bytes: int, *, setting: str) -> None:
    """Let this process map at most ``budget_bytes`` more than it maps now (a forked child
    inherits its parent's mappings, a few GB of them address space only once torch is
    imported). ``setting`` names what sized the budget, for the error text. No limit for
    a budget of 0, or where the platform has no RLIMIT_AS."""
    global _BUDGET
    if budget_bytes <= 0:
        return
    try:
        import resource
    except ImportError:  # not a POSIX platform
        return
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = mapped_bytes() + budget_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    _BUDGET = (budget_bytes, setting)


def gigabytes(count: int) -> str:
    """``count`` bytes as GB for a message: "4 GB", "0.5 GB"."""
    return f"{count / 2**30:.3g} GB"


def out_of_memory_text(doing: str) -> str:
    """What to say when ``doing`` ran out of memory: the limit that stopped it, if any."""
    if _BUDGET is None:
        return f"ran out of memory while {doing} (MemoryError)"
    budget, setting = _BUDGET
    return f"needed more than {gigabytes(budget)} of memory while {doing} (the limit is {setting})"


def error_text(exc: BaseException, doing: str) -> str:
    """An exception as a message that is never empty: a MemoryError says which limit it
    met; any other error with no text of its own gives its class name, and either says
    what was being done (``doing``: "decoding the image")."""
    text = str(exc).strip().strip("'\"")
    if isinstance(exc, MemoryError):
        detail = f": {text}" if text else ""
        return out_of_memory_text(doing) + detail
    return text or f"{exc.__class__.__name__} while {doing}"
