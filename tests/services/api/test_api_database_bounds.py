"""A stopped database costs a request the API's database bound, not for ever
(services/api/context.py: ``read_on_loop`` for the whole of a read on the event loop,
``in_thread`` through shared/db/bounded_waits.py for the blocking work). A Postgres of this
test's own, stopped with SIGSTOP, postmaster and backends alike: reads, token lookups and
submissions answer 503 "database unavailable" within 3x the bound, /readyz within 3x its
check timeout, naming the database. Before, a read took 22 s
and more against a 10 s bound, and a token lookup or a submission waited for ever."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from services.api.app import create_app
from services.api.auth import create_token
from shared.db.session import forget_engines, session_scope
from shared.settings import Settings
from tests.services.api.conftest import Api, RecordingPublisher
from tests.support.own_servers import OwnPostgres, outcome_within, stopped_postgres

BOUND_S = 2.0
READ = "{ evaluations(first: 5) { totalCount } }"
SUBMIT = """mutation($input: SubmitEvaluationInput!) {
  submitEvaluation(input: $input) { __typename ... on Evaluation { id } } }"""


@pytest.fixture
def own_postgres() -> Iterator[OwnPostgres]:
    server = OwnPostgres()
    try:
        server.init()
    except Exception as exc:
        server.close()
        pytest.skip(f"cannot start a Postgres of this test's own: {exc}")
    try:
        yield server
    finally:
        forget_engines()
        server.close()


def _answer_within(api: Api, token: str, query: str, variables: dict[str, Any]) -> Any:
    answers: list[Any] = []
    raised = outcome_within(
        lambda: answers.append(api.gql(token, query, variables)), limit_s=3 * BOUND_S
    )
    assert raised is None, raised
    return answers[0]


def test_a_stopped_database_is_a_503_within_the_bound(
    own_postgres: OwnPostgres, tmp_path: Path
) -> None:
    settings = Settings(
        data_dir=tmp_path,
        database_url=own_postgres.admin_url,
        environment="test",
        api_database_timeout_seconds=BOUND_S,
        # Every request looks its token up: the blocking path is met every time.
        api_token_cache_seconds=0,
        readiness_cache_seconds=0,
        readiness_check_timeout_seconds=1.0,
    )
    with session_scope(settings.effective_database_url) as session:
        token = create_token(session, user_name="alice")
    with TestClient(create_app(settings, publish=RecordingPublisher())) as client:
        api = Api(client, settings, RecordingPublisher())
        api.add_agent()
        quick = {"model": "resnet18", "framework": "null", "settings": {"minDurationS": 0.3}}
        assert api.gql(token, READ, {}).status_code == 200
        with stopped_postgres(own_postgres):
            for query, variables in ((READ, {}), (SUBMIT, {"input": quick}), (READ, {})):
                answer = _answer_within(api, token, query, variables)
                assert answer.status_code == 503, answer.text
                (error,) = answer.json()["errors"]
                assert error["extensions"]["code"] == "DATABASE_UNAVAILABLE"
            # /readyz names the database within its check timeout (1 s).
            probes: list[Any] = []
            assert outcome_within(lambda: probes.append(client.get("/readyz")), 3.0) is None
            assert probes[0].status_code == 503
            assert probes[0].json()["database"] == "error: database check timed out after 1 s"
        # Continued, the API serves again: nothing in it stays broken.
        deadline = time.monotonic() + 20
        while api.gql(token, READ, {}).status_code != 200:
            assert time.monotonic() < deadline, "the API did not recover"
            time.sleep(0.2)
        submitted = api.gql(token, SUBMIT, {"input": quick})
        assert submitted.json()["data"]["submitEvaluation"]["__typename"] == "Evaluation"
