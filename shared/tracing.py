"""OpenTelemetry setup and trace-context propagation through Celery message headers.

One evaluation is one trace: the API's span is the parent of the scheduler's, which is
the parent of each preprocess task and the inference run, and so on. The context travels
in W3C ``traceparent`` headers injected at publish time and extracted when a task starts.
Spans are exported over OTLP/HTTP when ``BENCHSTACK_OTLP_ENDPOINT`` is set; otherwise
they are created (cheaply) and dropped.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.propagators.textmap import Getter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanProcessor

from shared.queues import PUBLISHED_AT_HEADER
from shared.settings import Settings

_TRACER_NAME = "benchstack"
# Seconds a task's message waited between its publish and the worker starting the task.
QUEUE_WAIT_ATTRIBUTE = "benchstack.queue_wait_s"
_installed_signals = False


def setup_tracing(
    service_name: str,
    settings: Settings,
    *,
    exporter: SpanExporter | None = None,
    install: bool = True,
    record_requests: bool = True,
) -> TracerProvider:
    """A tracer provider for this service, installed as the process's own.

    OpenTelemetry keeps the first provider a process installs and ignores later ones, so
    each service calls this once at start-up. ``record_requests``: keep the spans of
    evaluations' requests in the database (shared/request_spans.py).
    """
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    processor: SpanProcessor | None = None
    if exporter is not None:
        processor = BatchSpanProcessor(exporter)
    elif settings.otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        endpoint = settings.otlp_endpoint.rstrip("/") + "/v1/traces"
        processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint))
    if processor is not None:
        provider.add_span_processor(processor)
    if record_requests:
        from shared.request_spans import RequestSpanRecorder

        provider.add_span_processor(
            RequestSpanRecorder(settings.effective_database_url, service_name)
        )
    if install:
        trace.set_tracer_provider(provider)
    return provider


def tracer() -> trace.Tracer:
    return trace.get_tracer(_TRACER_NAME)


def inject_headers(headers: dict[str, Any]) -> dict[str, Any]:
    """Write the current context's ``traceparent`` (and friends) into ``headers``."""
    propagate.inject(headers)
    return headers


class _RequestGetter(Getter[Any]):
    """Reads propagation fields from a Celery task request or a plain mapping."""

    def get(self, carrier: Any, key: str) -> list[str] | None:
        value = carrier.get(key) if isinstance(carrier, dict) else _header(carrier, key)
        if value is None:
            return None
        return [value] if isinstance(value, str) else list(value)

    def keys(self, carrier: Any) -> list[str]:
        return list(carrier) if isinstance(carrier, dict) else []


def _header(request: Any, key: str) -> Any:
    """One header of a Celery task request: Celery copies a message's headers onto it."""
    value = getattr(request, key, None)
    if value is None:
        value = (getattr(request, "headers", None) or {}).get(key)
    return value


def extract_context(carrier: Any) -> otel_context.Context:
    return propagate.extract(carrier, getter=_RequestGetter())


def install_celery_propagation() -> None:
    """Connect Celery signals: inject on publish, open a task span on the worker."""
    global _installed_signals
    if _installed_signals:
        return
    from celery import signals

    spans: dict[str, tuple[Any, object]] = {}

    @signals.before_task_publish.connect(weak=False)
    def _inject(headers: dict[str, Any] | None = None, **_: Any) -> None:
        if headers is not None:
            inject_headers(headers)

    @signals.task_prerun.connect(weak=False)
    def _start(task_id: str = "", task: Any = None, args: Any = None, **_: Any) -> None:
        parent = extract_context(task.request) if task is not None else None
        span = tracer().start_span(getattr(task, "name", "task"), context=parent)
        span.set_attribute("celery.task_id", task_id)
        # How long its message waited for this worker (broker and prefetch): the part of a
        # request's latency no task's own span covers.
        published_at = _header(task.request, PUBLISHED_AT_HEADER) if task is not None else None
        if isinstance(published_at, int | float):
            span.set_attribute(QUEUE_WAIT_ATTRIBUTE, max(0.0, time.time() - published_at))
        # Every task's payload names its evaluation: the span joins the request's record.
        payload = args[0] if args and isinstance(args[0], dict) else {}
        if isinstance(payload.get("evaluation_id"), str):
            span.set_attribute("benchstack.evaluation_id", payload["evaluation_id"])
        token = otel_context.attach(trace.set_span_in_context(span))
        spans[task_id] = (span, token)

    @signals.task_postrun.connect(weak=False)
    def _end(task_id: str = "", state: str | None = None, **_: Any) -> None:
        entry = spans.pop(task_id, None)
        if entry is None:
            return
        span, token = entry
        if state:
            span.set_attribute("celery.state", state)
        span.end()
        with contextlib.suppress(ValueError):
            otel_context.detach(token)  # type: ignore[arg-type]

    _installed_signals = True
