"""What a pass does around each predict: the instrument of one trace level.

An instrument is entered once per pass, runs each iteration's predict (``predict``), and
afterwards turns what it recorded into spans on benchstack's clock (``spans``), given the
windows in which benchstack saw each iteration run. Framework instruments live in their
own modules, named by each backend's spec; ``passes.instrument_for`` picks one for a level and
a backend, or says why none.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType
from typing import Any

import numpy as np

from services.inference.backend_interface import Backend
from services.inference.profiling.spans import Counter, Span


@dataclass(frozen=True)
class Window:
    """One iteration as benchstack's clock saw it."""

    iteration: int
    start_ns: int
    end_ns: int
    thread: int


class Instrument:
    """NONE and MODEL: the backend's own predict, nothing recorded inside it."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def __enter__(self) -> Instrument:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def predict(self, batch: np.ndarray, iteration: int) -> Any:
        return self.backend.predict(batch)

    def warm(self, batch: np.ndarray) -> None:
        """Run before the pass's first timed iteration (outside every window): an
        instrument that predicts on a session of its own warms that session here."""
        return None

    def spans(self, windows: list[Window]) -> list[Span]:
        """Spans below the iterations, each with args ``iteration``."""
        return []

    def counters(self) -> list[Counter]:
        return []

    def notes(self) -> list[str]:
        """What a reader of this pass's figures must know (e.g. a skipped GPU path)."""
        return []


def iteration_of(start_ns: int, end_ns: int, windows: list[Window]) -> int | None:
    """The iteration whose window contains [start, end], if any."""
    for window in windows:
        if window.start_ns <= start_ns and end_ns <= window.end_ns:
            return window.iteration
    return None


def spans_within(recorded: list[Span], windows: list[Window]) -> list[Span]:
    """The recorded spans that fall inside an iteration's window, each tagged with its
    iteration; spans outside every window (warm-up, the gaps between) are dropped."""
    kept = []
    for span in recorded:
        iteration = iteration_of(span.start_ns, span.end_ns, windows)
        if iteration is not None:
            span.args["iteration"] = iteration
            kept.append(span)
    return kept
