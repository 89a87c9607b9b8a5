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

from services.inference.backend_interface import Backend
from services.inference.loadgen.qsl import TensorQSL

MAX_ERRORS_KEPT = 20
# Server batches of every size up to this are run by each worker before the test.
MAX_WARMED_SIZES = 64
# Seconds a worker thread may spend on the sizes after the first: a large model on a CPU
# with a large cap would otherwise warm for minutes; the sizes it reaches are the small
# ones, which a lightly loaded Server forms most.
WARM_BUDGET_S = 10.0


def warm_sizes(scenario: str, batch_size: int) -> list[int]:
    """The batch sizes a worker thread runs before LoadGen starts, in order: the cap, and
    under Server (dynamic batching forms any size up to the cap) every size below it."""
    if scenario != "server":
        return [batch_size]
    return [batch_size, *range(1, min(batch_size - 1, MAX_WARMED_SIZES) + 1)]


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
    # Server: batches the issue thread ran itself (BatchingSUT._may_run_inline).
    inline_batches: int = 0


# One sample and the perf_counter_ns time it reached the SUT.
Arrival = tuple[Any, int]


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
        warm_batch: np.ndarray | None = None,
    ) -> None:
        """``warm_batch`` (``batch_size`` samples): each worker thread runs it at the sizes
        of ``warm_sizes`` before ``construct`` returns. Warming in the main thread is not
        enough: torch keeps cuDNN's per-shape plans per thread, and on an H200 a resnet18
        batch size's first call in a new thread took 16 ms against 1.5 ms after, which at
        25 QPS made a Server p99 of 18 ms."""
        import mlperf_loadgen

        if workers < 1:
            raise ValueError("workers: must be at least 1")
        self._lg = mlperf_loadgen  # bound once: no import machinery on the timed path
        self.backend = backend
        self.qsl = qsl
        self.batch_size = batch_size
        self.scenario = scenario
        self.keep_outputs = keep_outputs
        self.outputs: dict[int, np.ndarray] = {}
        self.stats = SUTStats()
        self._lock = threading.Lock()
        self._async = backend.asynchronous
        # Batches handed to an asynchronous backend and not completed yet; destroy() waits
        # for zero so no completion still runs while the results are read.
        self._in_flight = 0
        self._drained = threading.Condition(self._lock)
        # Offline and Server hand work to worker threads so LoadGen's issue thread stays free.
        self._queued = scenario in {"offline", "server"} and not self._async
        self._queue: queue.Queue[list[Arrival] | None] = queue.Queue()
        self._threads = [
            threading.Thread(target=self._worker, name=f"sut-worker-{i}", daemon=True)
            for i in range(workers if self._queued else 0)
        ]
        self._handle: Any = None
        self._warm_batch = warm_batch
        # Server: samples queued or on a worker; and the last query the issue thread ran
        # itself, when it ended and how long it took (perf_counter_ns), see _may_run_inline.
        self._pending = 0
        self._inline_end_ns = 0
        self._inline_cost_ns = 0
        self._warmed = threading.Semaphore(0)

    # LoadGen callbacks -------------------------------------------------------------------
    def issue_queries(self, query_samples: Sequence[Any]) -> None:
        received = time.perf_counter_ns()
        arrivals = [(sample, received) for sample in query_samples]
        # list.extend is atomic under the GIL; no lock on LoadGen's issue thread.
        self.stats.arrivals_ns.extend([received] * len(arrivals))
        if self._queued and self.scenario == "server":
            if self._may_run_inline(arrivals, received):
                self._run_inline(arrivals)
                return
            # Each arrival is queued; the worker groups what is waiting into a batch.
            with self._lock:
                self._pending += len(arrivals)
            for arrival in arrivals:
                self._queue.put([arrival])
            return
        for start in range(0, len(arrivals), self.batch_size):
            chunk = arrivals[start : start + self.batch_size]
            if self._queued:
                self._queue.put(chunk)
            elif self._async:
                self._run_async(chunk)
            else:
                self._run_batch(chunk)

    def flush_queries(self) -> None:
        """LoadGen calls this when it issues no more queries; nothing is held back here."""

    # Server: running a query on the issue thread when nothing else is ------------------
    def _may_run_inline(self, arrivals: list[Arrival], received: int) -> bool:
        """Whether the issue thread runs this query itself, as SingleStream does: one
        sample, no query queued or on a worker, and no sign of a backlog (the gap since the
        last such run ended is at least that run's length).

        Handing a query to a worker costs a thread wake-up and a GIL hand-over, more than a
        small model's call: null backend, Server at 600 QPS, side by side on a 2-core VM,
        the SUT's p50 was 28 us handed over and 9 us run here (LoadGen's p50 75-83 us and
        55-63 us; the rest is LoadGen's own wake-up, see timer_slack.py). While the issue
        thread runs a query LoadGen issues nothing, and
        the queries it issues late are timed from their scheduled time (LoadGen's rule),
        so a backlog is not hidden; a short gap means LoadGen is catching up, and those
        queries go to the workers, which batch them."""
        return (
            len(arrivals) == 1
            and self._pending == 0
            and received - self._inline_end_ns >= self._inline_cost_ns
        )

    def _run_inline(self, arrivals: list[Arrival]) -> None:
        self._run_batch(arrivals)
        ended = time.perf_counter_ns()
        self._inline_cost_ns = ended - arrivals[0][1]
        self._inline_end_ns = ended
        self.stats.inline_batches += 1

    # Work --------------------------------------------------------------------------------
    def _warm_this_thread(self) -> None:
        started = time.perf_counter()
        try:
            if self._warm_batch is not None:
                first, *rest = warm_sizes(self.scenario, len(self._warm_batch))
                self.backend.predict(self._warm_batch[:first])
                for size in rest:
                    if time.perf_counter() - started > WARM_BUDGET_S:
                        break
                    self.backend.predict(self._warm_batch[:size])
        except Exception:  # the main thread's warm-up already vetted the model
            pass
        finally:
            self._warmed.release()

    def _worker(self) -> None:
        self._warm_this_thread()
        while True:
            chunk = self._queue.get()
            if chunk is None:
                return
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
                    chunk.extend(more)
            self._run_batch(chunk)
            with self._lock:
                self._pending -= len(chunk)

    def _run_batch(self, chunk: list[Arrival]) -> None:
        try:
            batch = self.qsl.gather([sample.index for sample, _ in chunk])
            result: np.ndarray | None = self.backend.predict(batch)
            error: BaseException | None = None
        except Exception as exc:  # a failing model must not hang LoadGen
            result, error = None, exc
        self._complete(chunk, result, error)

    def _run_async(self, chunk: list[Arrival]) -> None:
        try:
            batch = self.qsl.gather([sample.index for sample, _ in chunk])
        except Exception as exc:
            self._complete(chunk, None, exc)
            return
        with self._lock:
            self._in_flight += 1

        def done(result: np.ndarray | None, error: BaseException | None) -> None:
            try:
                self._complete(chunk, result, error)
            finally:
                with self._lock:
                    self._in_flight -= 1
                    self._drained.notify_all()

        try:
            self.backend.predict_async(batch, done)
        except Exception as exc:
            done(None, exc)

    def _complete(
        self,
        chunk: list[Arrival],
        result: np.ndarray | None,
        error: BaseException | None,
    ) -> None:
        """Complete every sample of the chunk with LoadGen, whatever happened before."""
        lg = self._lg
        keep: list[np.ndarray] = []
        responses = [lg.QuerySampleResponse(sample.id, 0, 0) for sample, _ in chunk]
        try:
            if error is None and (result is None or len(result) < len(chunk)):
                rows = 0 if result is None else len(result)
                error = ValueError(f"outputs[0]: {rows} rows for a batch of {len(chunk)}")
            if error is None and result is not None and self.keep_outputs:
                # Accuracy mode (untimed): LoadGen copies each response into its log.
                keep = [np.ascontiguousarray(result[i]) for i in range(len(chunk))]
                responses = [
                    lg.QuerySampleResponse(sample.id, row.ctypes.data, row.nbytes)
                    for (sample, _), row in zip(chunk, keep, strict=True)
                ]
                with self._lock:
                    for (sample, _), row in zip(chunk, keep, strict=True):
                        self.outputs[sample.index] = row
        except Exception as exc:  # never leave a query uncompleted
            error, keep = exc, []
            responses = [lg.QuerySampleResponse(sample.id, 0, 0) for sample, _ in chunk]
        finally:
            lg.QuerySamplesComplete(responses)
            finished = time.perf_counter_ns()
            with self._lock:
                self.stats.batches += 1
                self.stats.samples += len(chunk)
                self.stats.latencies_ns.extend(finished - received for _, received in chunk)
                self.stats.completions.append((finished, len(chunk)))
                if error is not None:
                    self.stats.failed_samples += len(chunk)
                    if len(self.stats.errors) < MAX_ERRORS_KEPT:
                        self.stats.errors.append(f"{type(error).__name__}: {error}")

    # Lifecycle ---------------------------------------------------------------------------
    def construct(self) -> Any:
        for thread in self._threads:
            thread.start()
        for _ in self._threads:
            self._warmed.acquire()  # LoadGen's clock starts after every worker is warm
        self._handle = self._lg.ConstructSUT(self.issue_queries, self.flush_queries)
        return self._handle

    def destroy(self) -> None:
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join()
        with self._drained:
            self._drained.wait_for(lambda: self._in_flight == 0)
        if self._handle is not None:
            self._lg.DestroySUT(self._handle)
            self._handle = None
