"""The system under test: turns LoadGen's queries into backend batches and completes them.

Rules kept here, from MLPerf's reference harness:
- every issued sample is completed, even when the backend raises (else LoadGen waits forever);
- latency is LoadGen's, from the scheduled issue time to QuerySamplesComplete, so queueing
  inside the SUT counts (no coordinated omission);
- the only work on the timed path is gather -> predict -> complete.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from services.inference.backends.base import Backend
from services.inference.loadgen.qsl import TensorQSL

MAX_ERRORS_KEPT = 20


@dataclass
class SUTStats:
    """What the SUT saw, beside LoadGen's own figures."""

    batches: int = 0
    samples: int = 0
    failed_samples: int = 0
    errors: list[str] = field(default_factory=list)
    # Per sample: ns from the SUT receiving it to its completion (LoadGen's clock is the truth).
    latencies_ns: list[int] = field(default_factory=list)
    # For windowed stability: when each sample reached the SUT, and each completion event
    # as (finished_ns, samples) - a batch completes as one event. perf_counter_ns clock.
    arrivals_ns: list[int] = field(default_factory=list)
    completions: list[tuple[int, int]] = field(default_factory=list)


class BatchingSUT:
    def __init__(
        self,
        backend: Backend,
        qsl: TensorQSL,
        *,
        batch_size: int,
        scenario: str,
        workers: int = 1,
        keep_outputs: bool = False,
    ) -> None:
        self.backend = backend
        self.qsl = qsl
        self.batch_size = batch_size
        self.scenario = scenario
        self.keep_outputs = keep_outputs
        self.outputs: dict[int, np.ndarray] = {}
        self.stats = SUTStats()
        self._lock = threading.Lock()
        self._async = bool(getattr(backend, "supports_async", False))
        # Offline and Server hand work to worker threads so LoadGen's issue thread stays free.
        self._queued = scenario in {"offline", "server"} and not self._async
        self._queue: queue.Queue[tuple[list[Any], int] | None] = queue.Queue()
        self._threads = [
            threading.Thread(target=self._worker, name=f"sut-worker-{i}", daemon=True)
            for i in range(workers if self._queued else 0)
        ]
        self._handle: Any = None

    # LoadGen callbacks -------------------------------------------------------------------
    def issue_queries(self, query_samples: Sequence[Any]) -> None:
        received = time.perf_counter_ns()
        samples = list(query_samples)
        # list.extend is atomic under the GIL; no lock on LoadGen's issue thread.
        self.stats.arrivals_ns.extend([received] * len(samples))
        if self._queued and self.scenario == "server":
            # Each arrival is queued; the worker groups what is waiting into a batch.
            for sample in samples:
                self._queue.put(([sample], received))
            return
        for start in range(0, len(samples), self.batch_size):
            chunk = samples[start : start + self.batch_size]
            if self._queued:
                self._queue.put((chunk, received))
            elif self._async:
                self._run_async(chunk, received)
            else:
                self._run_batch(chunk, received)

    def flush_queries(self) -> None:
        """LoadGen calls this when it issues no more queries; nothing is held back here."""

    # Work --------------------------------------------------------------------------------
    def _worker(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            chunk, received = item
            if self.scenario == "server":
                # Dynamic batching: take whatever else has arrived, up to the batch size.
                while len(chunk) < self.batch_size:
                    try:
                        more = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if more is None:
                        self._queue.put(None)
                        break
                    chunk.extend(more[0])
                    received = min(received, more[1])
            self._run_batch(chunk, received)

    def _run_batch(self, chunk: list[Any], received: int) -> None:
        try:
            batch = self.qsl.gather([s.index for s in chunk])
            result: np.ndarray | None = self.backend.predict(batch)
            error: BaseException | None = None
        except Exception as exc:  # a failing model must not hang LoadGen
            result, error = None, exc
        self._complete(chunk, received, result, error)

    def _run_async(self, chunk: list[Any], received: int) -> None:
        try:
            batch = self.qsl.gather([s.index for s in chunk])
        except Exception as exc:
            self._complete(chunk, received, None, exc)
            return

        def done(result: np.ndarray | None, error: BaseException | None) -> None:
            self._complete(chunk, received, result, error)

        try:
            self.backend.predict_async(batch, done)  # type: ignore[attr-defined]
        except Exception as exc:
            self._complete(chunk, received, None, exc)

    def _complete(
        self,
        chunk: list[Any],
        received: int,
        result: np.ndarray | None,
        error: BaseException | None,
    ) -> None:
        import mlperf_loadgen as lg

        keep: list[np.ndarray] = []
        responses = []
        if error is None and result is not None and self.keep_outputs:
            for i, sample in enumerate(chunk):
                row = np.ascontiguousarray(result[i])
                keep.append(row)
                responses.append(lg.QuerySampleResponse(sample.id, row.ctypes.data, row.nbytes))
        else:
            responses = [lg.QuerySampleResponse(s.id, 0, 0) for s in chunk]
        lg.QuerySamplesComplete(responses)
        finished = time.perf_counter_ns()
        with self._lock:
            self.stats.batches += 1
            self.stats.samples += len(chunk)
            self.stats.latencies_ns.extend([finished - received] * len(chunk))
            self.stats.completions.append((finished, len(chunk)))
            if error is not None:
                self.stats.failed_samples += len(chunk)
                if len(self.stats.errors) < MAX_ERRORS_KEPT:
                    self.stats.errors.append(f"{type(error).__name__}: {error}")
            elif keep:
                for sample, row in zip(chunk, keep, strict=True):
                    self.outputs[sample.index] = row

    # Lifecycle ---------------------------------------------------------------------------
    def construct(self) -> Any:
        import mlperf_loadgen as lg

        for thread in self._threads:
            thread.start()
        self._handle = lg.ConstructSUT(self.issue_queries, self.flush_queries)
        return self._handle

    def destroy(self) -> None:
        import mlperf_loadgen as lg

        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join()
        if self._handle is not None:
            lg.DestroySUT(self._handle)
            self._handle = None
