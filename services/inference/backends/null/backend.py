"""The null backend: returns zeros, so a run measures the harness alone.

With ``extra={"service_time_ms": X}`` each batch takes X ms (a sleep), which makes it a
server of known capacity for checking find-peak and the scenarios against theory.
With ``extra={"fail_every": N}`` every Nth batch raises, so a user can see for themselves
that a run with failed samples is judged INVALID in every mode.
"""

from __future__ import annotations

import time

import numpy as np

from services.core.manifest import ModelManifest
from services.inference.backend_interface import Backend, BackendError, BackendOptions
from shared.package_version import __version__


class NullBackend(Backend):
    name = "null"
    threads_fixed_at_load = False  # it computes nothing: threads change nothing

    def version(self) -> str:
        return __version__

    def load(self, manifest: ModelManifest) -> None:
        self._service_time_s = float(self.options.extra.get("service_time_ms", 0.0)) / 1000.0
        self._num_outputs = int(self.options.extra.get("num_outputs", 10))
        self._fail_every = int(self.options.extra.get("fail_every", 0))
        if self._fail_every < 0:
            raise BackendError(
                f"fail_every: {self._fail_every} is not accepted; accepted: 0 (never) or N >= 1"
            )
        self._batches = 0
        self._measuring = False

    def resume(self, options: BackendOptions) -> None:
        # Kept loaded from a run before (the model cache): its warm-up is not the run's.
        super().resume(options)
        self._measuring = False
        self._batches = 0

    def start_measurement(self) -> None:
        # Warm-up batches do not count toward fail_every: the failures belong to the run.
        self._measuring = True
        self._batches = 0

    def predict(self, batch: np.ndarray) -> np.ndarray:
        self._batches += 1
        failing = self._measuring and self._fail_every
        if failing and self._batches % self._fail_every == 0:
            raise RuntimeError(f"fail_every={self._fail_every}: batch {self._batches} fails")
        if self._service_time_s > 0:
            time.sleep(self._service_time_s)
        return np.zeros((batch.shape[0], self._num_outputs), dtype=np.float32)

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "service_time_ms": self._service_time_s * 1000.0}
