"""Loaded models kept across runs in one process, so a sweep loads its model once.

An entry is keyed by the framework, the manifest (its canonical JSON, which holds every
model file's sha256, and the folder it resolves against), each model file's identity on
disk (size, mtime, inode: a file replaced under an unchanged manifest is a miss, and the
load that follows verifies it again) and the backend options (device, threads, extra).

The cache is bounded by memory: an entry's size is the larger of the process's resident
memory growth while it loaded and what the backend says its model holds (the growth
misses memory the allocator kept from earlier frees), and the
least recently used entries are closed once the total passes the budget. A budget of 0
keeps nothing: every use loads and closes, as before the cache. A run that raises drops
its entry, since a backend that failed mid-run may hold a broken session.

Where models stay: in the embedded CLI's process (bench, sweep, find-peak) and in an
inference worker's resident measurement process (``isolated.ResidentChild``).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace

from services.core.manifest import ManifestError, ModelManifest
from services.inference.backend_interface import Backend, BackendOptions
from services.inference.backends.registry import backend_class

log = logging.getLogger(__name__)

# The most models one process keeps, whatever their size: each holds framework sessions
# and thread pools besides its weights.
MAX_ENTRIES = 4


@dataclass(frozen=True)
class ModelUse:
    """One run's model: loaded for it (cold) or kept from an earlier run (warm)."""

    backend: Backend
    cold: bool
    # The load's wall time; for a warm use, that of the load which put it in the cache.
    load_s: float
    # Earlier runs this loaded model served.
    runs_before: int

    def timings(self) -> dict[str, float]:
        """What Measurement.timings records about the model besides ``model_load_s``
        (written by the load's own phase clock, and only when it loaded)."""
        return {"model_cache_hit": 0.0 if self.cold else 1.0, "model_cold_load_s": self.load_s}


@dataclass
class _Entry:
    backend: Backend
    load_s: float
    size_bytes: int
    runs: int = 0
    in_use: bool = False


def model_key(framework: str, options: BackendOptions, manifest: ModelManifest) -> str:
    """The cache key: what makes two loads interchangeable (see the module docstring).
    Thread counts are left out for a backend that applies them per run (``resume``), so
    a run whose thread choice differs (the machine's load moved) still finds its model."""
    files: list[tuple[str, int, int, int]] = []
    for field, model_file in manifest.model_files():
        if model_file.path is None:
            continue
        try:
            stat = manifest.resolve_path(model_file.path, f"{field}.path").stat()
        except (ManifestError, OSError):
            # Left to the load, which refuses it with the field named.
            files.append((field, -1, -1, -1))
            continue
        files.append((field, stat.st_size, stat.st_mtime_ns, stat.st_ino))
    document = {
        "framework": framework,
        # How inputs are prepared (Input.fidelity) changes no loaded model.
        "manifest": manifest.with_fidelity("reference").to_dict(),
        "base_dir": manifest.base_dir,
        "files": files,
        "options": asdict(options)
        if _threads_fixed_at_load(framework)
        else asdict(replace(options, intra_op_threads=0, inter_op_threads=0)),
    }
    text = json.dumps(document, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _threads_fixed_at_load(framework: str) -> bool:
    try:
        return backend_class(framework).threads_fixed_at_load
    except Exception:  # unknown or not installed: the load says so; keep threads in the key
        return True


def _resident_bytes() -> int:
    import psutil

    return int(psutil.Process(os.getpid()).memory_info().rss)


class ModelCache:
    """Backends kept loaded across runs, least recently used closed first."""

    def __init__(self, budget_bytes: int, max_entries: int = MAX_ENTRIES) -> None:
        self.budget_bytes = max(0, budget_bytes)
        self.max_entries = max_entries
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.loads = 0
        self.hits = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        return sum(entry.size_bytes for entry in self._entries.values())

    @contextmanager
    def use(
        self, key: str, load: Callable[[], Backend], options: BackendOptions
    ) -> Iterator[ModelUse]:
        """The backend for ``key``: kept from an earlier run (given this run's ``options``
        through ``resume``), or made by ``load()`` (which returns a loaded backend and
        closes what it made when it fails)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and not entry.in_use:
                self._entries.move_to_end(key)
            else:
                entry = None  # in use by another thread: that run keeps it to itself
        cold = entry is None
        if entry is None:
            before = _resident_bytes()
            start = time.perf_counter()
            backend = load()
            load_s = time.perf_counter() - start
            grown = _resident_bytes() - before
            entry = _Entry(backend, load_s, max(grown, backend.footprint_bytes(), 0))
            self.loads += 1
        else:
            self.hits += 1
            entry.backend.resume(options)
        entry.in_use = True
        use = ModelUse(entry.backend, cold=cold, load_s=entry.load_s, runs_before=entry.runs)
        try:
            yield use
        except BaseException:
            entry.in_use = False
            with self._lock:
                if self._entries.get(key) is entry:
                    del self._entries[key]
            self._close(entry, "its run failed")
            raise
        entry.in_use = False
        entry.runs += 1
        with self._lock:
            evicted: list[_Entry] = []
            twin = self._entries.get(key)
            if twin is not entry:
                # A twin loaded for a concurrent run: one copy is enough, keep the newer.
                if twin is not None and not twin.in_use:
                    evicted.append(self._entries.pop(key))
                self._entries[key] = entry
                self._entries.move_to_end(key)
            evicted += self._over_budget()
        for old in evicted:
            self._close(old, "the model cache is over its budget")

    def _over_budget(self) -> list[_Entry]:
        """Entries to close, least recently used first, until the rest fit. Called with
        the lock held."""
        evicted: list[_Entry] = []
        for key in list(self._entries):
            total = sum(entry.size_bytes for entry in self._entries.values())
            fits = total <= self.budget_bytes and len(self._entries) <= self.max_entries
            if fits and self.budget_bytes > 0:
                break
            if self._entries[key].in_use:
                continue
            evicted.append(self._entries.pop(key))
        return evicted

    def clear(self) -> None:
        """Close every model not in use (a worker shutting down, a test ending)."""
        with self._lock:
            idle = [key for key, entry in self._entries.items() if not entry.in_use]
            closing = [self._entries.pop(key) for key in idle]
        for entry in closing:
            self._close(entry, "the cache was cleared")

    @staticmethod
    def _close(entry: _Entry, why: str) -> None:
        log.debug("closing a cached %s model: %s", entry.backend.name, why)
        try:
            entry.backend.close()
        except Exception:  # closing must not fail the run that triggered it
            log.warning("closing a cached %s model failed", entry.backend.name, exc_info=True)


_PROCESS_CACHE: ModelCache | None = None


def process_cache(budget_bytes: int) -> ModelCache:
    """This process's cache, created at the first call; later calls adopt a new budget
    (settings are read per run)."""
    global _PROCESS_CACHE
    if _PROCESS_CACHE is None:
        _PROCESS_CACHE = ModelCache(budget_bytes)
        # Close what is still loaded while the interpreter is whole: a model left to the
        # garbage collector at shutdown (a Triton gRPC client) fails in its __del__ once
        # its library's module globals are gone, and prints a traceback after the report.
        atexit.register(_PROCESS_CACHE.clear)
    _PROCESS_CACHE.budget_bytes = max(0, budget_bytes)
    return _PROCESS_CACHE
