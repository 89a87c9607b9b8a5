"""GraphQL API behaviour without servers: auth, typed errors, visibility, publishing."""

from __future__ import annotations

import json
from collections.abc import Callable

from services.api.auth import hash_token
from shared.db.accounts import ApiToken
from shared.db.evaluation_repo import transition
from shared.db.evaluations import Evaluation
from shared.db.session import session_scope
from shared.db.states import EvaluationState
from tests.services.api.conftest import Api

QUICK = {"model": "resnet18", "framework": "null", "settings": {"minDurationS": 0.3}}


def test_operations_need_a_valid_token(api: Api) -> None:
    assert api.gql(None, "{ models { name } }").status_code == 401
    assert api.gql("bst_unknown", "{ models { name } }").status_code == 401
    token = api.token("alice")
    assert api.gql(token, "{ models { name } }").status_code == 200


def test_tokens_are_stored_hashed(api: Api) -> None:
    token = api.token("alice")
    with session_scope(api.settings.effective_database_url) as session:
        rows = session.query(ApiToken).all()
        assert [r.token_hash for r in rows] == [hash_token(token)]
        assert all(token not in (r.token_hash, r.prefix) for r in rows)


def test_submit_accepts_and_publishes_once(api: Api, submit_query: Callable[[], str]) -> None:
    api.add_agent()
    token = api.token("alice")
    result = api.data(token, submit_query(), {"input": QUICK})["submitEvaluation"]
    assert result["__typename"] == "Evaluation" and result["state"] == "QUEUED"
    ((task, payload, _queue),) = api.publisher.sent
    assert task == "scheduler.plan_evaluation"
    assert payload == {"evaluation_id": result["id"]}


def test_rejections_are_typed_and_publish_nothing(
    api: Api, submit_query: Callable[[], str]
) -> None:
    api.add_agent()
    token = api.token("alice")
    cases = [
        ({"model": "nope"}, "UnknownModel", "model"),
        ({"settings": {"targetQps": 0}}, "InvalidScenarioSettings", "settings.target_qps"),
        ({"settings": [1, 2]}, "InvalidScenarioSettings", "settings"),
        ({"device": "cuda"}, "NoMatchingAgent", "device"),
        ({"framework": "torch"}, "NoMatchingAgent", "framework"),
        ({"framework": "caffe"}, "InvalidInput", "framework"),
        ({"traceLevel": "LOUD"}, "InvalidInput", "traceLevel"),
        ({"preprocessing": "turbo"}, "InvalidInput", "preprocessing"),
        ({"model": None, "manifest": "name: [oops"}, "InvalidManifest", "manifest"),
    ]
    for overrides, typename, field in cases:
        result = api.data(token, submit_query(), {"input": {**QUICK, **overrides}})
        result = result["submitEvaluation"]
        assert (result["__typename"], result["field"]) == (typename, field), result
    assert api.publisher.sent == []
    assert api.data(token, "{ evaluations { totalCount } }")["evaluations"]["totalCount"] == 0


def test_preprocessing_is_stored_in_the_evaluations_manifest(
    api: Api, submit_query: Callable[[], str]
) -> None:
    """The scheduler, the preprocess worker and a rerun all read the stored manifest, so
    the mode asked for is what prepares the shards (their keys hash the input spec)."""
    api.add_agent()
    token = api.token("alice")
    ids = {}
    for mode in ("fast", "reference", None):
        overrides = {} if mode is None else {"preprocessing": mode}
        result = api.data(token, submit_query(), {"input": {**QUICK, **overrides}})
        ids[mode] = result["submitEvaluation"]["id"]
    query = "query($id: String!) { evaluation(id: $id) { preprocessing } }"
    shown = {mode: api.data(token, query, {"id": i})["evaluation"] for mode, i in ids.items()}
    assert shown == {
        "fast": {"preprocessing": "fast"},
        "reference": {"preprocessing": "reference"},
        None: {"preprocessing": "reference"},  # resnet18's manifest leaves the default
    }
    with session_scope(api.settings.effective_database_url) as session:
        stored = session.get(Evaluation, ids["fast"])
        assert stored is not None
        assert [spec["fidelity"] for spec in stored.manifest["inputs"]] == ["fast"]


def test_unmet_framework_version_is_named(api: Api, submit_query: Callable[[], str]) -> None:
    api.add_agent(framework="torch", version="1.13.0")
    token = api.token("alice")
    result = api.data(token, submit_query(), {"input": {**QUICK, "framework": "torch"}})
    result = result["submitEvaluation"]
    # resnet18's manifest asks for torch>=2.0; the only agent has 1.13.
    assert result["__typename"] == "NoMatchingAgent"
    assert result["field"] == "frameworkVersion" and "1.13.0" in result["message"]


def test_visibility_and_cancel_are_per_user(api: Api, submit_query: Callable[[], str]) -> None:
    api.add_agent()
    alice, bob = api.token("alice"), api.token("bob")
    created = api.data(alice, submit_query(), {"input": QUICK})["submitEvaluation"]
    one = "query($id: String!) { evaluation(id: $id) { id state } }"
    cancel = """mutation($id: String!) {
        cancelEvaluation(id: $id) { __typename ... on Evaluation { state } } }"""
    assert api.data(bob, one, {"id": created["id"]})["evaluation"] is None
    assert api.data(bob, "{ evaluations { totalCount } }")["evaluations"]["totalCount"] == 0
    assert (
        api.data(bob, cancel, {"id": created["id"]})["cancelEvaluation"]["__typename"] == "NotFound"
    )
    mine = api.data(alice, cancel, {"id": created["id"]})["cancelEvaluation"]
    assert mine == {"__typename": "Evaluation", "state": "CANCELLED"}


def test_evaluations_filter_and_paginate(api: Api, submit_query: Callable[[], str]) -> None:
    api.add_agent()
    token = api.token("alice")
    for _ in range(3):
        api.data(token, submit_query(), {"input": QUICK})
    query = """query($after: String) { evaluations(first: 2, after: $after,
                 where: {status: QUEUED, framework: "null"}) {
                 totalCount nextCursor items { id } } }"""
    first = api.data(token, query)["evaluations"]
    assert first["totalCount"] == 3 and len(first["items"]) == 2
    second = api.data(token, query, {"after": first["nextCursor"]})["evaluations"]
    assert len(second["items"]) == 1 and second["nextCursor"] is None


def test_register_model_then_submit_it(api: Api, submit_query: Callable[[], str]) -> None:
    api.add_agent()
    token = api.token("alice")
    from services.core.catalogue import CATALOGUE_DIR

    text = (CATALOGUE_DIR / "resnet18.yaml").read_text().replace("name: resnet18", "name: my-net")
    register = """mutation($m: String!) { registerModel(manifest: $m) {
        __typename ... on Model { name version origin } ... on UserError { field } } }"""
    assert api.data(token, register, {"m": text})["registerModel"] == {
        "__typename": "Model",
        "name": "my-net",
        "version": "1.0.0",
        "origin": "registered",
    }
    assert api.data(token, register, {"m": text})["registerModel"]["__typename"] == "ModelExists"
    bad = api.data(token, register, {"m": "name: x"})["registerModel"]
    assert bad["__typename"] == "InvalidManifest"
    result = api.data(token, submit_query(), {"input": {**QUICK, "model": "my-net"}})
    assert result["submitEvaluation"]["__typename"] == "Evaluation"


def test_subscription_streams_until_final(api: Api, submit_query: Callable[[], str]) -> None:
    api.add_agent()
    token = api.token("alice")
    created = api.data(token, submit_query(), {"input": QUICK})["submitEvaluation"]
    with session_scope(api.settings.effective_database_url) as session:
        transition(session, created["id"], EvaluationState.FAILED, reason="test")
    with api.client.websocket_connect("/graphql", subprotocols=["graphql-transport-ws"]) as ws:
        ws.send_text(
            json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
        )
        assert json.loads(ws.receive_text())["type"] == "connection_ack"
        ws.send_text(
            json.dumps(
                {
                    "id": "1",
                    "type": "subscribe",
                    "payload": {
                        "query": "subscription($id: String!) "
                        "{ evaluationUpdates(id: $id) { state reason } }",
                        "variables": {"id": created["id"]},
                    },
                }
            )
        )
        update = json.loads(ws.receive_text())
        assert update["payload"]["data"]["evaluationUpdates"] == {
            "state": "FAILED",
            "reason": "test",
        }
        assert json.loads(ws.receive_text())["type"] == "complete"


def test_websocket_without_token_is_rejected(api: Api) -> None:
    with api.client.websocket_connect("/graphql", subprotocols=["graphql-transport-ws"]) as ws:
        ws.send_text(json.dumps({"type": "connection_init", "payload": {}}))
        message = ws.receive()
        assert message["type"] == "websocket.close"
        assert message["code"] == 4403


def test_health_and_metrics(api: Api) -> None:
    assert api.client.get("/healthz").json() == {"status": "ok"}
    api.client.get("/healthz")
    text = api.client.get("/metrics").text
    assert "benchstack_api_requests_total" in text
