"""The null backend: returns zeros, so a run measures the harness alone.

With ``extra={"service_time_ms": X}`` each batch takes X ms (a sleep), which makes it a
server of known capacity for checking find-peak and the scenarios against theory.
"""

from __future__ import annotations

import time

import numpy as np

from services.inference.backends.base import Backend
from shared.manifest import ModelManifest
from shared.version import __version__


class NullBackend(Backend):
    name = "null"

    def version(self) -> str:
        return __version__

    def load(self, manifest: ModelManifest) -> None:
        self._service_time_s = float(self.options.extra.get("service_time_ms", 0.0)) / 1000.0
        self._num_outputs = int(self.options.extra.get("num_outputs", 10))

    def predict(self, batch: np.ndarray) -> np.ndarray:
        if self._service_time_s > 0:
            time.sleep(self._service_time_s)
        return np.zeros((batch.shape[0], self._num_outputs), dtype=np.float32)

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "service_time_ms": self._service_time_s * 1000.0}
