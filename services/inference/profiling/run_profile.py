"""Profiling around one benchmark run, the same for ``bench`` and the inference worker.

At NONE nothing here runs. Otherwise the run's steps become MODEL spans (``step``), the
first inference after loading is recorded cold (``cold``), LoadGen measures the headline
figures with no instrument in place, and only then the leveled passes run on the same
loaded backend (``passes``). ``write`` puts the trace JSON beside the run's logs, and
``summary`` is what the report keeps (``Measurement.profile``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from services.inference.backend_interface import Backend
from services.inference.profiling.analysis import summarise
from services.inference.profiling.levels import parse_trace_level
from services.inference.profiling.passes import (
    DEFAULT_ITERATIONS,
    new_profile,
    record_cold,
    run_passes,
)
from services.inference.profiling.spans import SpanRecorder
from services.inference.profiling.trace_events import TRACE_FILE, trace_document


def batch_of(tensors: np.ndarray, batch_size: int) -> np.ndarray:
    """A batch of ``batch_size`` samples, repeating the first ones when there are fewer."""
    if len(tensors) == 0:
        raise ValueError("dataset: no prepared samples to profile")
    return tensors[np.arange(batch_size) % len(tensors)]


class RunProfiler:
    def __init__(
        self,
        level: str = "NONE",
        iterations: int = DEFAULT_ITERATIONS,
        *,
        passes_at_none: bool = False,
    ) -> None:
        """``passes_at_none``: run the NONE pass even at NONE (``benchstack profile``,
        whose only figures are the passes'); a benchmark run at NONE runs nothing here."""
        self.level = parse_trace_level(level)
        self.enabled = self.level != "NONE" or passes_at_none
        self.profile = new_profile(self.level, iterations)
        self.steps = SpanRecorder(enabled=self.level != "NONE")

    @contextlib.contextmanager
    def step(self, name: str, **args: Any) -> Iterator[None]:
        """A MODEL-level span for one of the run's steps (dataset, model load, ...)."""
        with self.steps.span(name, "step", **args):
            yield

    def cold(self, backend: Backend, batch: np.ndarray) -> None:
        if self.enabled:
            record_cold(backend, batch, self.profile)

    def passes(self, backend: Backend, batch: np.ndarray) -> None:
        if self.enabled:
            with self.step("profiling passes", level=self.level):
                run_passes(backend, batch, self.profile)

    def summary(self) -> dict[str, Any] | None:
        return summarise(self.profile) if self.enabled else None

    def document(self, **other: Any) -> dict[str, Any]:
        self.profile.spans.extend(self.steps.spans)
        self.steps.spans = []
        return trace_document(self.profile, **other)

    def write(self, folder: Path, **other: Any) -> dict[str, Path]:
        """{TRACE_FILE: path} for the run's files, or {} at NONE."""
        if not self.enabled:
            return {}
        path = folder / TRACE_FILE
        path.write_text(json.dumps(self.document(**other)))
        return {TRACE_FILE: path}
