"""Spans that name an evaluation are kept in the database by the service that ended them;
others are not, and a database that refuses them costs nothing but the spans."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from shared.db.accounts import User
from shared.db.evaluations import Evaluation
from shared.db.request_spans import RequestSpan
from shared.db.session import get_engine, init_schema, session_scope
from shared.request_spans import EVALUATION_ATTRIBUTE, RequestSpanRecorder
from shared.settings import Settings
from shared.tracing import setup_tracing


def _evaluation(url: str) -> str:
    with session_scope(url) as session:
        user = User(name="tracer")
        session.add(user)
        session.flush()
        evaluation = Evaluation(
            id="e-1",
            owner_id=user.id,
            model_name="m",
            model_version="1",
            manifest={},
            framework="null",
            device="cpu",
            scenario={},
            batch_size=1,
            dataset="synthetic",
        )
        session.add(evaluation)
        session.flush()
        return evaluation.id


def test_spans_naming_an_evaluation_are_stored_with_their_service(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'spans.db'}"
    init_schema(get_engine(url))
    evaluation_id = _evaluation(url)
    provider = setup_tracing("benchstack-test", Settings(database_url=url), install=False)
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("api.submit_evaluation") as root:
        root.set_attribute(EVALUATION_ATTRIBUTE, evaluation_id)
        with tracer.start_as_current_span("unrelated"):
            pass
    provider.force_flush()
    with session_scope(url) as session:
        rows = list(session.scalars(select(RequestSpan)))
    assert [(r.name, r.service, r.evaluation_id) for r in rows] == [
        ("api.submit_evaluation", "benchstack-test", evaluation_id)
    ]
    (row,) = rows
    assert row.trace_id == f"{root.get_span_context().trace_id:032x}" and row.end_ns > row.start_ns
    provider.shutdown()


def test_a_database_that_refuses_them_drops_the_spans_and_nothing_else(tmp_path: Path) -> None:
    recorder = RequestSpanRecorder(f"sqlite:///{tmp_path / 'missing' / 'no.db'}", "svc")
    provider = setup_tracing("svc", Settings(), install=False, record_requests=False)
    provider.add_span_processor(recorder)
    with provider.get_tracer("t").start_as_current_span("x") as span:
        span.set_attribute(EVALUATION_ATTRIBUTE, "e")
    provider.force_flush()
    assert recorder.dropped == 1
    provider.shutdown()
