"""Idempotent submissions (services/api/client_keys.py): a retry with the same clientKey
by the same user answers the evaluation the first try stored and stores nothing more;
another user's same key is theirs; a key that is not one is refused naming the field."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from services.api.app import create_app
from shared.db.evaluations import Evaluation
from shared.db.session import session_scope
from shared.settings import Settings
from tests.services.api.conftest import Api, RecordingPublisher
from tests.support.own_servers import OwnRedis, outcome_within, stopped

QUICK = {"model": "resnet18", "framework": "null", "settings": {"minDurationS": 0.3}}


def _stored(api: Api) -> int:
    with session_scope(api.settings.effective_database_url) as session:
        return int(session.scalar(select(func.count()).select_from(Evaluation)) or 0)


def _submit(api: Api, token: str, query: str, **extra: Any) -> dict[str, Any]:
    answer: dict[str, Any] = api.data(token, query, {"input": {**QUICK, **extra}})
    return dict(answer["submitEvaluation"])


def test_a_retry_with_the_same_key_returns_the_same_evaluation(
    api: Api, submit_query: Callable[[], str]
) -> None:
    api.add_agent()
    alice, bob = api.token("alice"), api.token("bob")
    first = _submit(api, alice, submit_query(), clientKey="k-1")
    assert first["__typename"] == "Evaluation"
    # Whatever else the retry says, the key names the first submission.
    again = _submit(api, alice, submit_query(), clientKey="k-1", seed=7)
    assert again["id"] == first["id"]
    assert _stored(api) == 1
    assert len(api.publisher.sent) == 1
    # Bob's key is his own: the same text stores his own evaluation.
    bobs = _submit(api, bob, submit_query(), clientKey="k-1")
    assert bobs["__typename"] == "Evaluation" and bobs["id"] != first["id"]
    # A new key, or none, is a new submission.
    assert _submit(api, alice, submit_query(), clientKey="k-2")["id"] != first["id"]
    assert _submit(api, alice, submit_query())["id"] != first["id"]
    assert _submit(api, alice, submit_query())["id"] != first["id"]
    assert _stored(api) == 5


def test_a_fan_out_retried_with_its_key_returns_the_same_comparison(api: Api) -> None:
    api.add_agent()
    token = api.token("alice")
    query = """mutation($input: SubmitEvaluationInput!) {
      submitEvaluation(input: $input) {
        __typename ... on Comparison { id rows { evaluationId } } } }"""
    first = _submit(api, token, query, fanOut=True, clientKey="fan-1")
    again = _submit(api, token, query, fanOut=True, clientKey="fan-1")
    assert first["__typename"] == again["__typename"] == "Comparison"
    assert again == first
    assert _stored(api) == len(first["rows"])


def test_a_key_that_is_not_one_is_refused_naming_the_field(
    api: Api, submit_query: Callable[[], str]
) -> None:
    api.add_agent()
    token = api.token("alice")
    for bad in ("", "x" * 101, "has space", "é"):
        refused = _submit(api, token, submit_query(), clientKey=bad)
        assert refused["__typename"] == "InvalidInput", bad
        assert refused["field"] == "clientKey"
        assert "1 to 100 of" in refused["message"]
    assert _stored(api) == 0


def test_a_submission_to_a_stopped_broker_answers_503_and_its_retry_no_duplicate(
    tmp_path: Path,
) -> None:
    """A Redis of this test's own stopped with SIGSTOP: the submission answers 503 naming
    the stored evaluation within 3x the publish bound (before: no answer until the Redis
    was continued, and a client retrying made a second evaluation); the retry with the
    same key, during the outage and after, reads the same evaluation back."""
    redis = OwnRedis()
    redis.start()
    bounds = {
        "broker_connect_timeout_seconds": 0.5,
        "broker_socket_timeout_seconds": 1.5,
        "broker_publish_timeout_seconds": 3.0,
    }
    try:
        settings = Settings(
            data_dir=tmp_path,
            database_url=f"sqlite:///{tmp_path / 'api.db'}",
            broker_url=redis.url,
            environment="test",
            **bounds,
        )
        with TestClient(create_app(settings)) as client:
            api = Api(client, settings, RecordingPublisher())
            api.add_agent()
            token = api.token("alice")
            keyed = {"input": {**QUICK, "clientKey": "cli-7f3a"}}
            query = """mutation($input: SubmitEvaluationInput!) {
              submitEvaluation(input: $input) { __typename ... on Evaluation { id } } }"""
            answers: list[Any] = []
            with stopped(redis):
                for _ in range(2):
                    raised = outcome_within(
                        lambda: answers.append(api.gql(token, query, keyed)), limit_s=9.0
                    )
                    assert raised is None, raised
            first, during = answers
            assert first.status_code == 503, first.text
            (stored_id,) = first.json()["errors"][0]["extensions"]["evaluationIds"]
            assert during.json()["data"]["submitEvaluation"]["id"] == stored_id
            after = api.gql(token, query, keyed)
            assert after.json()["data"]["submitEvaluation"]["id"] == stored_id
            assert _stored(api) == 1
    finally:
        redis.stop()


def test_a_campaign_ignores_a_client_key_in_its_evaluation(api: Api) -> None:
    """A sweep's points are submissions of their own: a clientKey in the sweep's evaluation
    input must not make the second point read the first one back."""
    api.add_agent()
    token = api.token("alice")
    query = """mutation($input: SubmitSweepInput!) { submitSweep(input: $input) {
      __typename ... on Sweep { groupId } ... on UserError { message } } }"""
    given = {
        "evaluation": {**QUICK, "clientKey": "sweep-1"},
        "parameter": "batch_size",
        "values": [1, 2, 4],
    }
    answer = api.data(token, query, {"input": given})["submitSweep"]
    assert answer["__typename"] == "Sweep", answer
    assert _stored(api) == 3
