"""Leveled, iterative measurement.

A profile is: the first inference after loading ("cold"), instrumented at the deepest
layer level asked for; a short warm-up; then one pass per level (``levels.passes_for``),
shallowest first, each running the same batch ``iterations`` times. Headline figures come
from the NONE pass, which records nothing but its own latencies; each deeper level's
figures come from its own pass, so no profiler's overhead reaches a shallower figure.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from services.inference.backends.base import Backend
from services.inference.profiling.instruments import Window, instrument_for
from services.inference.profiling.levels import instruments_for, parse_trace_level, passes_for
from services.inference.profiling.spans import Counter, Span, SpanRecorder, now_ns
from services.inference.profiling.summary import latency_figures

DEFAULT_ITERATIONS = 10
# Enough that the NONE pass, which runs first, measures a warm model (2 left resnet50
# about 30 % slow on this machine).
WARM_UP_ITERATIONS = 5
CLOCK_METHOD = (
    "one clock: perf_counter_ns anchored once to wall time; framework profilers' events "
    "are shifted per iteration so their own iteration marker (torch: a record_function "
    "annotation; ONNX Runtime: model_run) starts where benchstack saw the iteration start"
)


@dataclass
class PassResult:
    level: str
    label: str
    latencies_ns: list[int] = field(default_factory=list)
    skipped: str = ""
    notes: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        figures: dict[str, Any] = {"level": self.level, "pass": self.label}
        if self.skipped:
            return figures | {"skipped": self.skipped}
        return figures | {"iterations": len(self.latencies_ns)} | latency_figures(self.latencies_ns)


@dataclass
class Profile:
    level: str
    iterations: int
    passes: list[PassResult] = field(default_factory=list)
    cold: PassResult | None = None
    spans: list[Span] = field(default_factory=list)
    counters: list[Counter] = field(default_factory=list)

    def pass_of(self, level: str) -> PassResult | None:
        return next((p for p in self.passes if p.level == level and not p.skipped), None)

    @property
    def notes(self) -> list[str]:
        notes = [p.skipped for p in self.passes if p.skipped]
        for result in [*self.passes, *([self.cold] if self.cold else [])]:
            notes.extend(n for n in result.notes if n not in notes)
        return notes


def run_pass(
    backend: Backend,
    batch: np.ndarray,
    level: str,
    iterations: int,
    profile: Profile,
    *,
    label: str | None = None,
) -> PassResult:
    """One pass at ``level``, appended to ``profile.passes``; its spans join ``profile``."""
    label = label or level
    instrument = instrument_for(level, backend)
    if isinstance(instrument, str):
        result = PassResult(level, label, skipped=instrument)
        profile.passes.append(result)
        return result
    result = PassResult(level, label)
    profile.passes.append(result)
    thread = threading.get_native_id()
    windows: list[Window] = []
    pass_start = now_ns()
    with instrument:
        for iteration in range(iterations):
            start = now_ns()
            instrument.predict(batch, iteration)
            end = now_ns()
            windows.append(Window(iteration, start, end, thread))
    pass_end = now_ns()
    result.latencies_ns = [w.end_ns - w.start_ns for w in windows]
    result.notes = instrument.notes()
    if level != "NONE":
        # NONE keeps nothing but its latencies: it is the uninstrumented pass.
        inner = instrument.spans(windows)
        for span in inner:
            span.args["pass"] = label
        forwards = [
            Span(
                "forward",
                "model",
                w.start_ns,
                w.end_ns - w.start_ns,
                thread,
                {"pass": label, "iteration": w.iteration},
            )
            for w in windows
        ]
        starts = [pass_start, *(s.start_ns for s in inner if s.thread == thread)]
        ends = [pass_end, *(s.end_ns for s in inner if s.thread == thread)]
        profile.spans.append(
            Span(
                f"pass {label}",
                "pass",
                min(starts),
                max(ends) - min(starts),
                thread,
                {"level": level, "iterations": iterations},
            )
        )
        profile.spans.extend(forwards)
        profile.spans.extend(inner)
        profile.counters.extend(instrument.counters())
    return result


def cold_level(level: str) -> str:
    """The deepest layer-level instrument a level asks for, for the first inference."""
    wanted = instruments_for(level)
    if wanted.framework:
        return "FRAMEWORK"
    return "MODEL" if wanted.model else "NONE"


def record_cold(backend: Backend, batch: np.ndarray, profile: Profile) -> PassResult:
    """The first inference after loading, before anything warms the model."""
    level = cold_level(profile.level)
    result = run_pass(backend, batch, level, 1, profile, label=f"cold {level}")
    if result.skipped and level != "MODEL":
        # No layer profiler here: the cold latency is still worth having.
        profile.passes.remove(result)
        result = run_pass(backend, batch, "MODEL", 1, profile, label="cold MODEL")
    profile.passes.remove(result)
    profile.cold = result
    return result


def run_passes(backend: Backend, batch: np.ndarray, profile: Profile) -> Profile:
    """The warm passes, one per level, shallowest first."""
    for _ in range(WARM_UP_ITERATIONS):
        backend.predict(batch)
    for level in passes_for(profile.level):
        run_pass(backend, batch, level, profile.iterations, profile)
    return profile


def new_profile(level: str, iterations: int = DEFAULT_ITERATIONS) -> Profile:
    if iterations < 1:
        raise ValueError(f"iterations: {iterations} must be at least 1")
    return Profile(parse_trace_level(level), iterations)


def profile_backend(
    backend: Backend,
    batch: np.ndarray,
    level: str,
    iterations: int = DEFAULT_ITERATIONS,
    steps: SpanRecorder | None = None,
) -> Profile:
    """Cold inference then every pass of ``level``, on a loaded backend."""
    profile = new_profile(level, iterations)
    record_cold(backend, batch, profile)
    run_passes(backend, batch, profile)
    if steps is not None:
        profile.spans.extend(steps.spans)
    return profile
