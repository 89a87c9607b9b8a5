"""Leveled, iterative measurement.

A profile is: the first inference after loading ("cold"), instrumented at the deepest
layer level asked for; a short warm-up; then one pass per level (``levels.passes_for``),
each running the same batch ``iterations`` times. Headline figures come from the NONE
pass, which records nothing but its own latencies; each deeper level's figures come from
its own pass, so no profiler's overhead reaches a shallower figure.

The passes run interleaved, in rounds: each round runs a slice of every pass's iterations,
in an order that alternates round by round. Run one after another, a pass measured
whatever the host did during its turn alone: three back-to-back profiles on a shared
2-core host put FRAMEWORK at 0.31, 0.60 and 1.16 times NONE. Interleaved, a burst of
load falls on every level alike, and the ratios between levels hold.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from services.inference.backend_interface import Backend
from services.inference.profiling.declared import declared
from services.inference.profiling.instruments import Instrument, Window
from services.inference.profiling.levels import instruments_for, parse_trace_level, passes_for
from services.inference.profiling.spans import Counter, Span, SpanRecorder, now_ns
from services.inference.profiling.summary import latency_figures

DEFAULT_ITERATIONS = 10
# At most this many rounds (fewer when there are fewer iterations: at least one each).
MAX_ROUNDS = 5
# Enough that the NONE pass, which runs first, measures a warm model (2 left resnet50
# about 30 % slow on this machine).
WARM_UP_ITERATIONS = 5
CLOCK_METHOD = (
    "one clock: perf_counter_ns anchored once to wall time; framework profilers' events "
    "are shifted per iteration so their own iteration marker (torch: a record_function "
    "annotation; ONNX Runtime: model_run) starts where benchstack saw the iteration start"
)


def instrument_for(level: str, backend: Backend) -> Instrument | str:
    """The instrument of ``level`` for this backend, or the reason there is none: the
    harness's own for NONE, MODEL and SYSTEM, else what the backend's spec declares
    (``profilers`` and ``profiler_gaps`` in its folder's config.py)."""
    if level in ("NONE", "MODEL"):
        return Instrument(backend)
    if level == "SYSTEM":
        from services.inference.profiling.system import SystemSampler

        return SystemSampler(backend)
    gap = declared().profiler_gap(backend.name, level)
    if gap is not None:
        return f"{level}: {gap}"
    make = declared().profiler(backend.name, level)
    if make is not None:
        return make(backend)
    return f"{level}: no {level.lower()}-level profiler for the {backend.name} backend yet"


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
    # Work per layer and this machine's peaks, for the roofline (roofline.py); None where
    # it is not measured (no FRAMEWORK pass, or a backend whose layers it cannot count).
    roofline_inputs: dict[str, Any] | None = None

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
    result: PassResult | None = None,
    first_iteration: int = 0,
) -> PassResult:
    """One pass at ``level``, appended to ``profile.passes``; its spans join ``profile``.
    Given the ``result`` of an earlier round, this round's iterations (numbered from
    ``first_iteration``) are added to it instead."""
    label = label or level
    if result is not None and result.skipped:
        return result
    instrument = instrument_for(level, backend)
    if isinstance(instrument, str):
        result = PassResult(level, label, skipped=instrument)
        profile.passes.append(result)
        return result
    if result is None:
        result = PassResult(level, label)
        profile.passes.append(result)
    thread = threading.get_native_id()
    windows: list[Window] = []
    pass_start = now_ns()
    with instrument:
        instrument.warm(batch)
        for iteration in range(first_iteration, first_iteration + iterations):
            start = now_ns()
            instrument.predict(batch, iteration)
            end = now_ns()
            windows.append(Window(iteration, start, end, thread))
    pass_end = now_ns()
    result.latencies_ns += [w.end_ns - w.start_ns for w in windows]
    result.notes += [n for n in instrument.notes() if n not in result.notes]
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


def round_sizes(iterations: int, max_rounds: int = MAX_ROUNDS) -> list[int]:
    """``iterations`` split into at most ``max_rounds`` rounds, as evenly as they go."""
    rounds = max(1, min(iterations, max_rounds))
    size, extra = divmod(iterations, rounds)
    return [size + (1 if r < extra else 0) for r in range(rounds)]


def run_passes(backend: Backend, batch: np.ndarray, profile: Profile) -> Profile:
    """The warm passes, one per level, interleaved in rounds (the module's docstring)."""
    for _ in range(WARM_UP_ITERATIONS):
        backend.predict(batch)
    levels = passes_for(profile.level)
    results: dict[str, PassResult] = {}
    done = 0
    for round_index, size in enumerate(round_sizes(profile.iterations)):
        # Alternating the order: no level always runs right after another's instrument.
        order = levels if round_index % 2 == 0 else tuple(reversed(levels))
        for level in order:
            results[level] = run_pass(
                backend,
                batch,
                level,
                size,
                profile,
                result=results.get(level),
                first_iteration=done,
            )
        done += size
    measure_roofline_inputs(backend, batch, profile)
    return profile


def measure_roofline_inputs(backend: Backend, batch: np.ndarray, profile: Profile) -> None:
    """After the timed passes (never inside one): each layer's FLOPs and bytes and the
    machine's peaks, where the FRAMEWORK pass ran on a backend whose spec declares a
    ``roofline`` (torch's eager model)."""
    framework = profile.pass_of("FRAMEWORK")
    if framework is None:
        return
    roofline = declared().roofline(backend.name)
    if roofline is None:
        return
    try:
        profile.roofline_inputs = roofline(backend, batch)
    except Exception as exc:  # a model FlopCounterMode cannot walk loses its roofline only
        framework.notes.append(f"roofline: not drawn ({type(exc).__name__}: {exc})"[:300])


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
