"""A submission opens the root span of its evaluation's trace, and the message carries it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from shared.tracing import extract_context, inject_headers
from tests.services.api.conftest import Api

QUICK = {
    "model": "resnet18",
    "framework": "null",
    "scenario": "offline",
    "settings": {"minDurationS": 0.2, "targetQps": 100},
    "samples": 4,
}


def test_submission_is_the_root_span_and_its_context_travels(
    api: Api, submit_query: Callable[[], str], spans: InMemorySpanExporter
) -> None:
    api.add_agent()
    seen: list[dict[str, Any]] = []
    recording = api.publisher

    def publish_and_capture(task_name: str, message: Any, queue: str | None) -> None:
        # What Celery's before_task_publish hook adds to a message's headers.
        seen.append(inject_headers({}))
        recording(task_name, message, queue)

    api.client.app.state.deps.publish = publish_and_capture  # type: ignore[attr-defined]
    token = api.token("alice")
    result = api.data(token, submit_query(), {"input": QUICK})["submitEvaluation"]
    assert result["__typename"] == "Evaluation", result
    (span,) = [s for s in spans.get_finished_spans() if s.name == "api.submit_evaluation"]
    assert span.attributes is not None
    assert span.attributes["benchstack.evaluation_id"] == result["id"]
    assert "traceparent" in seen[0]
    carried = trace.get_current_span(extract_context(seen[0])).get_span_context()
    assert carried.trace_id == span.context.trace_id
