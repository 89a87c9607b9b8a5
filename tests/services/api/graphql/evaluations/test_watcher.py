"""evaluationUpdates from one poller: many subscribers cost one query per interval, a
user's subscriptions are capped, and each still sees its evaluation to the end."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import WebSocketTestSession

from services.api.graphql.evaluations import watcher as watcher_module
from shared.db.evaluation_repo import transition
from shared.db.session import session_scope
from shared.db.states import EvaluationState
from tests.services.api.conftest import Api, api_with

SUBSCRIBE = "subscription($id: String!) { evaluationUpdates(id: $id) { state reason } }"
SUBMIT = """mutation($input: SubmitEvaluationInput!) {
  submitEvaluation(input: $input) { __typename ... on Evaluation { id } } }"""
QUICK = {"model": "resnet18", "framework": "null", "settings": {"minDurationS": 0.3}}


@pytest.fixture
def capped(tmp_path: Path) -> Iterator[Api]:
    with api_with(tmp_path, max_subscriptions_per_user=3) as made:
        yield made


def _subscribe(api: Api, stack: ExitStack, token: str, evaluation_id: str) -> WebSocketTestSession:
    ws = stack.enter_context(
        api.client.websocket_connect("/graphql", subprotocols=["graphql-transport-ws"])
    )
    init = {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}
    ws.send_text(json.dumps(init))
    assert json.loads(ws.receive_text())["type"] == "connection_ack"
    payload = {"query": SUBSCRIBE, "variables": {"id": evaluation_id}}
    ws.send_text(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
    return ws


def _first(ws: WebSocketTestSession) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(ws.receive_text())
    return message


def test_a_user_s_subscriptions_are_capped_and_many_cost_one_poll(
    capped: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    capped.add_agent()
    token = capped.token("alice")
    created = capped.data(token, SUBMIT, {"input": QUICK})["submitEvaluation"]["id"]
    polls: list[int] = []
    views = watcher_module._views

    def counted(deps: Any, keys: list[Any]) -> Any:
        polls.append(len(keys))
        return views(deps, keys)

    monkeypatch.setattr(watcher_module, "_views", counted)
    with ExitStack() as stack:
        sockets = [_subscribe(capped, stack, token, created) for _ in range(3)]
        for ws in sockets:
            first = _first(ws)
            assert first["payload"]["data"]["evaluationUpdates"]["state"] == "QUEUED"
        refused = _first(_subscribe(capped, stack, token, created))
        errors = refused["payload"] if refused["type"] == "error" else refused["payload"]["errors"]
        assert "BENCHSTACK_MAX_SUBSCRIPTIONS_PER_USER" in errors[0]["message"], refused
        with session_scope(capped.settings.effective_database_url) as session:
            transition(session, created, EvaluationState.FAILED, reason="ended by the test")
        for ws in sockets:
            update = _first(ws)["payload"]["data"]["evaluationUpdates"]
            assert update == {"state": "FAILED", "reason": "ended by the test"}
            assert _first(ws)["type"] == "complete"
    # Three subscribers on one evaluation: each poll read it once, for all three.
    assert polls and all(count == 1 for count in polls), polls


def test_another_user_s_evaluation_reads_as_missing(api: Api) -> None:
    api.add_agent()
    alice, bob = api.token("alice"), api.token("bob")
    created = api.data(alice, SUBMIT, {"input": QUICK})["submitEvaluation"]["id"]
    with ExitStack() as stack:
        ws = _subscribe(api, stack, bob, created)
        assert _first(ws)["payload"]["data"]["evaluationUpdates"] is None
        assert _first(ws)["type"] == "complete"
