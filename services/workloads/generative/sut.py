"""The streaming SUT: LoadGen issues requests, an engine streams their tokens, and the
SUT tells LoadGen of each request's first token (FirstTokenComplete) and of its end
(QuerySamplesComplete with the output token count). LoadGen alone decides when a request
is issued; the SUT only queues what it is given.

Worker threads take what is queued, up to the engine's batch, and generate it: one worker
with a batch is static batching (Offline), many workers of one request each are
concurrent streams (a serving endpoint). Each request's times are recorded too (records),
for intervals and goodput; LoadGen's logs stay the judged figures.

QuerySampleResponse objects are made and handed to LoadGen in this process only: they do
not survive pickling.
"""

from __future__ import annotations

import queue
import threading
import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from services.workloads.generative.engine import Engine, Generation, GenerationRequest

# LoadGen refuses a completion of fewer than this many tokens (its TPOT divides by n - 1);
# a failed request is completed with this many so the run ends, and counts in none of our
# figures (LoadGen's own token rates include them: the failures are reported beside).
MIN_COMPLETED_TOKENS = 2
MAX_GAPS = 4_000_000


@dataclass
class RequestRecord:
    """One request as the SUT saw it, times in perf_counter nanoseconds."""

    index: int
    prompt_tokens: int
    issued_ns: int
    first_token_ns: int | None = None
    end_ns: int | None = None
    output_tokens: int = 0
    failure: str = ""
    # One gap per token after the first (inter-token latency), while the run's gap budget
    # lasts: the time since the previous token arrived; the tokens that arrived together
    # with another (one event of several) have a gap of zero, so the gaps add up to the
    # time from the first token to the last, as the reader saw them.
    gaps_ns: array[int] = field(default_factory=lambda: array("q"))

    @property
    def ttft_ns(self) -> int | None:
        return None if self.first_token_ns is None else self.first_token_ns - self.issued_ns

    @property
    def tpot_ns(self) -> float | None:
        """(end - first token) / (tokens - 1): LoadGen's definition of TPOT."""
        if self.first_token_ns is None or self.end_ns is None or self.output_tokens < 2:
            return None
        return (self.end_ns - self.first_token_ns) / (self.output_tokens - 1)

    @property
    def latency_ns(self) -> int | None:
        return None if self.end_ns is None else self.end_ns - self.issued_ns


@dataclass
class _Stream:
    """One request's sink: the first token goes to LoadGen as soon as it exists."""

    sample_id: int
    record: RequestRecord
    budget: GapBudget
    tokens: int = 0
    last_ns: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def token(self, count: int = 1) -> None:
        now = time.perf_counter_ns()
        if count <= 0:
            return
        with self.lock:
            first = self.tokens == 0
            self.tokens += count
            last, self.last_ns = self.last_ns, now
        if first:
            self.record.first_token_ns = now
            _first_token(self.sample_id)
        gaps = [0] * (count - 1) if first else [now - last] + [0] * (count - 1)
        self.record.gaps_ns.extend(gaps[: self.budget.take(len(gaps))])


class GapBudget:
    """How many inter-token gaps a run keeps (8 bytes each): past it, none are kept and
    the figure says so, so a long run's memory stays bounded."""

    def __init__(self, limit: int = MAX_GAPS):
        self.left = limit
        self.exhausted = False
        self._lock = threading.Lock()

    def take(self, wanted: int = 1) -> int:
        """How many of ``wanted`` gaps may be kept (all, some or none)."""
        with self._lock:
            given = min(wanted, self.left)
            self.left -= given
            self.exhausted = self.exhausted or given < wanted
            return given


def _first_token(sample_id: int) -> None:
    import mlperf_loadgen as lg

    # Performance mode reads no data: the first token's response carries none.
    lg.FirstTokenComplete([lg.QuerySampleResponse(sample_id, 0, 0, 1)])


class StreamingSUT:
    """LoadGen's SUT over an engine and a list of prompts (the QSL's samples)."""

    def __init__(self, engine: Engine, prompts: Sequence[GenerationRequest], workers: int = 1):
        if workers < 1:
            raise ValueError(f"workers: {workers} must be at least 1")
        self.engine = engine
        self.prompts = prompts
        self.workers = workers
        self.records: list[RequestRecord] = []
        self._records_lock = threading.Lock()
        self._queue: queue.SimpleQueue[tuple[int, RequestRecord] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self.gap_budget = GapBudget()

    def issue(self, samples: list[object]) -> None:
        """LoadGen's IssueQuery: queue and return at once."""
        now = time.perf_counter_ns()
        for sample in samples:
            index = int(sample.index)  # type: ignore[attr-defined]
            record = RequestRecord(index, len(self.prompts[index].prompt_ids), issued_ns=now)
            self._queue.put((int(sample.id), record))  # type: ignore[attr-defined]

    def flush(self) -> None:
        """LoadGen's FlushQueries: nothing is held back, so nothing to flush."""

    def start(self) -> None:
        for number in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"generative-sut-{number}")
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join()
        self._threads.clear()

    def _take(self) -> list[tuple[int, RequestRecord]] | None:
        """The next batch: wait for one request, then whatever else is queued, up to the
        engine's batch; None when the SUT stops."""
        item = self._queue.get()
        if item is None:
            return None
        batch = [item]
        while len(batch) < max(1, self.engine.max_batch):
            try:
                more = self._queue.get_nowait()
            except queue.Empty:
                break
            if more is None:  # stopping: let another worker (or this one next) see it
                self._queue.put(None)
                break
            batch.append(more)
        return batch

    def _work(self) -> None:
        while (batch := self._take()) is not None:
            streams = [_Stream(sample_id, record, self.gap_budget) for sample_id, record in batch]
            requests = [self.prompts[record.index] for _, record in batch]
            try:
                results = self.engine.generate(requests, streams)
            except Exception as exc:  # an engine must not raise; if it does, each fails
                reason = f"engine raised {type(exc).__name__}: {exc}"
                results = [Generation(stream.tokens, reason) for stream in streams]
            for stream, result in zip(streams, results, strict=True):
                self._complete(stream, result)

    def _complete(self, stream: _Stream, result: Generation) -> None:
        import mlperf_loadgen as lg

        record = stream.record
        record.end_ns = time.perf_counter_ns()
        record.output_tokens = result.output_tokens
        record.failure = result.failure
        if not result.failure and result.output_tokens < MIN_COMPLETED_TOKENS:
            record.failure = f"{result.output_tokens} output tokens; LoadGen needs at least 2"
        if stream.tokens == 0:  # LoadGen needs a first token before a completion
            record.first_token_ns = record.end_ns
            _first_token(stream.sample_id)
        ids = np.asarray(result.token_ids or (0,), dtype=np.int32)
        n_tokens = max(result.output_tokens, MIN_COMPLETED_TOKENS)
        response = lg.QuerySampleResponse(stream.sample_id, ids.ctypes.data, ids.nbytes, n_tokens)
        with self._records_lock:
            self.records.append(record)
        lg.QuerySamplesComplete([response])
