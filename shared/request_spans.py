"""Keep each service's spans of an evaluation's request in the database, so the run's
stored trace can hold the whole request (API, scheduler, preprocess, inference), not only
the part the inference worker saw. An OTLP collector, where one is set, gets them too;
this needs none.

A span is kept when it carries ``benchstack.evaluation_id``: the API's submission span and
every worker task's span (``shared/tracing.install_celery_propagation`` sets it from the
task's payload). Spans are queued on end and written in batches by a background thread,
so no request or task waits for the database; a full queue drops spans (counted), and a
failed write is logged and dropped: a trace is never worth a failed evaluation.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

EVALUATION_ATTRIBUTE = "benchstack.evaluation_id"
MAX_QUEUED = 10_000
FLUSH_SECONDS = 0.5
# Attributes kept per span (their values as text, each at most this long).
MAX_ATTRIBUTES = 20
MAX_ATTRIBUTE_CHARS = 200

log = logging.getLogger(__name__)


class RequestSpanRecorder(SpanProcessor):
    def __init__(self, database_url: str, service: str) -> None:
        self.database_url = database_url
        self.service = service
        self.dropped = 0
        self._start_writer()

    def _start_writer(self) -> None:
        # A forked worker child (Celery's prefork pool) inherits the queue but not the
        # thread: each process starts its own writer the first time it ends a span.
        self._pid = os.getpid()
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue(MAX_QUEUED)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="request-spans", daemon=True)
        self._thread.start()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        attributes = dict(span.attributes or {})
        evaluation_id = attributes.get(EVALUATION_ATTRIBUTE)
        context = span.context
        if not evaluation_id or context is None or span.start_time is None:
            return
        record = {
            "evaluation_id": str(evaluation_id)[:36],
            "trace_id": f"{context.trace_id:032x}",
            "span_id": f"{context.span_id:016x}",
            "parent_id": f"{span.parent.span_id:016x}" if span.parent else "",
            "name": span.name[:200],
            "service": self.service[:100],
            "start_ns": int(span.start_time),
            "end_ns": int(span.end_time or span.start_time),
            "attributes": {
                str(k)[:100]: str(v)[:MAX_ATTRIBUTE_CHARS]
                for k, v in list(attributes.items())[:MAX_ATTRIBUTES]
            },
        }
        if os.getpid() != self._pid:
            self._start_writer()
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1

    def _run(self) -> None:
        while not self._stopping.is_set():
            batch = self._take(timeout_s=FLUSH_SECONDS)
            if batch:
                self._write(batch)

    def _take(self, timeout_s: float) -> list[dict[str, Any]]:
        try:
            batch = [self._queue.get(timeout=timeout_s)]
        except queue.Empty:
            return []
        while len(batch) < 500:
            try:
                batch.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return batch

    def _write(self, batch: list[dict[str, Any]]) -> None:
        from shared.db.request_spans import RequestSpan
        from shared.db.session import session_scope

        try:
            with session_scope(self.database_url) as session:
                session.add_all(RequestSpan(**record) for record in batch)
        except Exception as exc:  # the trace is lost, never the evaluation
            self.dropped += len(batch)
            log.warning("request spans not stored (%d dropped): %s", len(batch), exc)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Write what is queued now (tests, shutdown)."""
        batch = []
        while True:
            try:
                batch.append(self._queue.get_nowait())
            except queue.Empty:
                break
        if batch:
            self._write(batch)
        return True

    def shutdown(self) -> None:
        self._stopping.set()
        self.force_flush()
