"""What a watched LoadGen test reports while it runs: its phase, the samples completed and
how far to LoadGen's end criteria, from a thread of its own (the CLI's progress bars)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from services.inference.loadgen.sut import BatchingSUT

# How often a watched run reports; a person reading a bar needs no more.
PROGRESS_INTERVAL_S = 0.25

log = logging.getLogger(__name__)

Phase = Literal["warming up", "calibrating", "measuring"]


@dataclass(frozen=True)
class RunProgress:
    """Where one LoadGen test stands, for a progress bar.

    LoadGen ends a test once both its minimum duration and its minimum query count are
    reached (Offline: once its one query's samples are done; accuracy: once every sample
    was issued), so the end is given as both; either is None where it does not apply.
    """

    phase: Phase
    completed_samples: int
    elapsed_s: float
    min_duration_s: float | None = None
    min_samples: int | None = None

    @property
    def fraction(self) -> float | None:
        """How far to LoadGen's end criteria, 0..1; None when nothing bounds the phase."""
        parts = []
        if self.min_duration_s:
            parts.append(self.elapsed_s / self.min_duration_s)
        if self.min_samples:
            parts.append(self.completed_samples / self.min_samples)
        return min(1.0, min(parts)) if parts else None


ProgressCallback = Callable[[RunProgress], None]


class ProgressPoller:
    """Reports a test's progress from its own thread, a few times a second.

    Nothing is added to the timed path: the SUT already counts completed samples under its
    lock; this thread only reads that counter (an int read, atomic under the GIL).
    """

    def __init__(
        self,
        callback: ProgressCallback,
        sut: BatchingSUT,
        phase: Phase,
        *,
        min_duration_s: float | None,
        min_samples: int | None,
    ) -> None:
        self._callback = callback
        self._sut = sut
        self._phase: Phase = phase
        self._min_duration_s = min_duration_s
        self._min_samples = min_samples
        self._stop = threading.Event()
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._poll, name="loadgen-progress", daemon=True)

    def _report(self) -> bool:
        try:
            self._callback(
                RunProgress(
                    phase=self._phase,
                    completed_samples=self._sut.stats.samples,
                    elapsed_s=time.monotonic() - self._started,
                    min_duration_s=self._min_duration_s,
                    min_samples=self._min_samples,
                )
            )
        except Exception:  # a broken progress display must never end a measurement
            log.exception("progress callback failed; no more progress for this %s", self._phase)
            return False
        return True

    def _poll(self) -> None:
        if not self._report():
            return
        while not self._stop.wait(PROGRESS_INTERVAL_S):
            if not self._report():
                return
        self._report()  # the final count, once LoadGen has returned

    def __enter__(self) -> ProgressPoller:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
