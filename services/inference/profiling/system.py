"""SYSTEM level: CPU and memory sampled during the pass; NVML on an NVIDIA GPU.

A thread samples every ``SAMPLE_INTERVAL_S``: the machine's CPU use, this process's CPU
use and resident memory (psutil), and, when NVML answers, each GPU's utilisation, memory,
SM clock and power. Samples are counter tracks in the trace.
"""

from __future__ import annotations

import threading
from typing import Any

import psutil

from services.inference.backend_interface import Backend
from services.inference.profiling.instruments import Instrument
from services.inference.profiling.spans import Counter, now_ns

SAMPLE_INTERVAL_S = 0.02


def nvml_handles() -> tuple[list[Any], str]:
    """NVML device handles, or none and the reason."""
    try:
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        return [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)], ""
    except ImportError:
        return [], "SYSTEM: no GPU sampled: pynvml is not installed"
    except Exception as exc:  # NVMLError subclasses vary by driver state
        return [], f"SYSTEM: no GPU sampled: NVML did not start ({exc})"


def gpu_sample(handle: Any) -> dict[str, float]:
    import pynvml

    rates = pynvml.nvmlDeviceGetUtilizationRates(handle)
    memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
    return {
        "gpu_percent": float(rates.gpu),
        "memory_used_mb": memory.used / 2**20,
        "sm_clock_mhz": float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
        "power_w": pynvml.nvmlDeviceGetPowerUsage(handle) / 1000,
    }


class SystemSampler(Instrument):
    def __init__(self, backend: Backend) -> None:
        super().__init__(backend)
        self._samples: list[Counter] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._process = psutil.Process()
        self._gpus, self._gpu_note = nvml_handles()

    def __enter__(self) -> SystemSampler:
        # cpu_percent measures since its previous call: prime both before the first sample.
        psutil.cpu_percent(None)
        self._process.cpu_percent(None)
        self._thread = threading.Thread(target=self._sample, name="benchstack-system", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        # The last sample covers the tail since the one before it, so a pass shorter than
        # one interval (a small model on a fast host) still has its CPU and memory.
        self._take_sample()

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            self._take_sample()

    def _take_sample(self) -> None:
        at = now_ns()
        self._samples.append(
            Counter(
                "cpu",
                at,
                {
                    "machine_percent": psutil.cpu_percent(None),
                    "process_percent": self._process.cpu_percent(None),
                },
            )
        )
        self._samples.append(
            Counter("memory", at, {"rss_mb": self._process.memory_info().rss / 2**20})
        )
        for index, handle in enumerate(self._gpus):
            self._samples.append(Counter(f"gpu{index}", at, gpu_sample(handle)))

    def counters(self) -> list[Counter]:
        return list(self._samples)

    def notes(self) -> list[str]:
        return [self._gpu_note] if self._gpu_note else []
