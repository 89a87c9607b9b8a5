"""LIBRARY level for torch: torch.profiler (Kineto) below the layers.

Each module call is wrapped in ``record_function("layer::<name>")`` by forward hooks, and
each iteration in ``record_function("benchstack::forward#<i>")``, so the aten operators
(and the oneDNN/MKL primitives they call, e.g. ``aten::mkldnn_convolution``) nest under
the layer that issued them. On a GPU, CUDA kernels come with the correlation id of the
runtime call that launched them (Kineto's ``correlation`` arg), on a track per stream.

Clock alignment: Kineto has its own clock. Each iteration's events are shifted by one
offset, the one that puts the iteration's ``benchstack::forward`` annotation at the
start of the window in which benchstack's clock saw that iteration run; the annotation
runs inside that window, so its events stay inside it.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile, record_function

from services.inference.backend_interface import Backend
from services.inference.profiling.instruments import Instrument, Window
from services.inference.profiling.spans import GPU_TRACK_BASE, Span, clamp_to_parents

FORWARD_MARK = "benchstack::forward#"
LAYER_MARK = "layer::"
MEMORY_EVENT = "[memory]"
# Kineto categories kept: operators, our annotations, and device work.
CPU_CATEGORIES = {"cpu_op", "user_annotation", "cuda_runtime"}
DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}


def gpu_in_use(backend: Backend) -> bool:
    return backend.options.device.startswith("cuda") and torch.cuda.is_available()


class TorchLibrary(Instrument):
    def __init__(self, backend: Backend) -> None:
        super().__init__(backend)
        self.model: torch.nn.Module = backend.model  # type: ignore[attr-defined]
        self._handles: list[Any] = []
        self._open: list[Any] = []
        self._events: list[dict[str, Any]] = []
        self._profiler: Any = None

    def __enter__(self) -> TorchLibrary:
        for name, module in self.model.named_modules():
            if name:
                self._handles.append(module.register_forward_pre_hook(self._pre_hook(name)))
                self._handles.append(module.register_forward_hook(self._post_hook))
        activities = [ProfilerActivity.CPU]
        if gpu_in_use(self.backend):
            activities.append(ProfilerActivity.CUDA)
        # profile_memory: each allocation and free as a "[memory]" instant event, which
        # layer_memory.py gives to the layer that made it.
        self._profiler = profile(activities=activities, record_shapes=True, profile_memory=True)
        self._profiler.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: Any) -> None:
        self._profiler.__exit__(exc_type, *rest)
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        if exc_type is None:
            with tempfile.TemporaryDirectory(prefix="benchstack-kineto-") as tmp:
                path = Path(tmp) / "trace.json"
                self._profiler.export_chrome_trace(str(path))
                document = json.loads(path.read_text())
            events = (
                document.get("traceEvents", document) if isinstance(document, dict) else document
            )
            self._events = [e for e in events if e.get("ph") == "X" or _is_memory(e)]

    def _pre_hook(self, name: str) -> Any:
        def hook(module: torch.nn.Module, inputs: Any) -> None:
            marker = record_function(LAYER_MARK + name)
            marker.__enter__()
            self._open.append(marker)

        return hook

    def _post_hook(self, module: torch.nn.Module, inputs: Any, output: Any) -> None:
        self._open.pop().__exit__(None, None, None)

    def predict(self, batch: np.ndarray, iteration: int) -> Any:
        with record_function(f"{FORWARD_MARK}{iteration}"):
            return self.backend.predict(batch)

    def notes(self) -> list[str]:
        if gpu_in_use(self.backend):
            return []
        return [
            "LIBRARY: no CUDA kernels traced: "
            + ("torch sees no GPU" if not torch.cuda.is_available() else "the run is on the CPU")
        ]

    def spans(self, windows: list[Window]) -> list[Span]:
        by_iteration = {w.iteration: w for w in windows}
        marks = [e for e in self._events if str(e.get("name", "")).startswith(FORWARD_MARK)]
        spans: list[Span] = []
        for mark in marks:
            iteration = int(str(mark["name"]).removeprefix(FORWARD_MARK))
            window = by_iteration.get(iteration)
            if window is None:
                continue
            frame = _Iteration(mark, iteration, window)
            for event in self._events:
                spans.extend(_converted(event, frame))
        return clamp_to_parents(spans)


def _is_memory(event: dict[str, Any]) -> bool:
    return event.get("ph") == "i" and event.get("name") == MEMORY_EVENT


@dataclass(frozen=True)
class _Iteration:
    """One iteration's ``benchstack::forward`` mark on Kineto's clock and the window in
    which benchstack's clock saw that iteration run."""

    mark: dict[str, Any]
    number: int
    window: Window

    @property
    def start_us(self) -> float:
        return float(self.mark["ts"])

    @property
    def end_us(self) -> float:
        return self.start_us + float(self.mark["dur"])

    @property
    def offset_ns(self) -> int:
        """Added to a Kineto time (in ns) to put it on benchstack's clock: the mark's start
        goes to the window's."""
        return self.window.start_ns - round(self.start_us * 1000)

    def on_mark_thread(self, event: dict[str, Any]) -> bool:
        return event.get("tid") == self.mark.get("tid")


def _memory_span(event: dict[str, Any], frame: _Iteration) -> list[Span]:
    """An allocation (bytes > 0) or a free (< 0) in the frame's iteration, on its thread."""
    ts = float(event.get("ts", 0))
    if not frame.on_mark_thread(event) or not frame.start_us <= ts <= frame.end_us:
        return []
    args = event.get("args") or {}
    window = frame.window
    start = min(max(round(ts * 1000) + frame.offset_ns, window.start_ns), window.end_ns)
    kept = {
        "bytes": int(args.get("Bytes", 0)),
        "total_allocated": int(args.get("Total Allocated", 0)),
        "device_type": int(args.get("Device Type", 0)),
        "iteration": frame.number,
    }
    return [Span(MEMORY_EVENT, "memory", start, 0, window.thread, kept)]


def _converted(event: dict[str, Any], frame: _Iteration) -> list[Span]:
    """``event`` on benchstack's clock if it belongs to the frame's iteration."""
    if event is frame.mark:
        return []
    if _is_memory(event):
        return _memory_span(event, frame)
    category = str(event.get("cat", ""))
    ts, dur = float(event.get("ts", 0)), float(event.get("dur", 0))
    args = dict(event.get("args") or {})
    on_device = category in DEVICE_CATEGORIES
    if on_device:
        # Device work belongs to the iteration whose launch it correlates with; a kernel
        # may end after the CPU returns, so it is matched by its start only.
        if not frame.start_us <= ts <= frame.end_us:
            return []
    else:
        on_mark_thread = category in CPU_CATEGORIES and frame.on_mark_thread(event)
        if not on_mark_thread or not (frame.start_us <= ts and ts + dur <= frame.end_us):
            return []
    name = str(event.get("name", ""))
    if name.startswith(LAYER_MARK):
        name, kind = name.removeprefix(LAYER_MARK), "library-layer"
    else:
        kind = "gpu" if on_device else "library"
    kept = {k: args[k] for k in ("Input Dims", "correlation", "External id", "stream") if k in args}
    kept["iteration"] = frame.number
    window = frame.window
    thread = GPU_TRACK_BASE + int(args.get("stream", 0) or 0) if on_device else window.thread
    # Ends rounded on their own (not start + rounded length): rounding is monotone, so
    # an event inside another stays inside it.
    start = round(ts * 1000) + frame.offset_ns
    duration = round((ts + dur) * 1000) + frame.offset_ns - start
    if not on_device:
        # Rounding must not push a child past its iteration's window.
        start = max(start, window.start_ns)
        duration = min(duration, window.end_ns - start)
    return [Span(name, kind, start, duration, thread, kept)]
