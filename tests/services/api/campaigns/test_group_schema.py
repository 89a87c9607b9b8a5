"""Every group kind's submit<Kind> and <kind>(groupId) come from one pattern
(services/api/campaigns/group_schema.py): exercised here through the API in-process
(SQLite, a recording publisher) on repeats and the pair, whose members are all submitted
at once."""

from __future__ import annotations

from tests.services.api.conftest import Api

QUICK = {"model": "resnet18", "framework": "null", "settings": {"minDurationS": 0.3}}
SUBMIT_REPEATS = """
mutation($input: SubmitRepeatsInput!) {
  submitRepeats(input: $input) {
    __typename
    ... on Repeats { groupId count }
    ... on UserError { message field }
  }
}"""
SUBMIT_PAIR = """
mutation($input: SubmitEvaluationInput!) {
  submitAccuracyPerformancePair(input: $input) {
    __typename
    ... on AccuracyPerformancePair { groupId }
    ... on UserError { field }
  }
}"""


def test_a_group_is_submitted_read_back_and_shown_to_its_owner_only(api: Api) -> None:
    api.add_agent()
    alice, bob = api.token("alice"), api.token("bob")
    submitted = api.data(alice, SUBMIT_REPEATS, {"input": {"evaluation": QUICK, "count": 3}})
    repeats = submitted["submitRepeats"]
    assert repeats["__typename"] == "Repeats" and repeats["count"] == 3
    assert len(api.publisher.sent) == 3

    query = "query($id: String!) { repeats(groupId: $id) { groupId count } }"
    variables = {"id": repeats["groupId"]}
    assert api.data(alice, query, variables)["repeats"] == {
        "groupId": repeats["groupId"],
        "count": 3,
    }
    assert api.data(bob, query, variables)["repeats"] is None
    assert api.data(alice, query, {"id": "no-such-group"})["repeats"] is None


def test_a_refused_group_is_a_typed_error_and_stores_nothing(api: Api) -> None:
    api.add_agent()
    token = api.token("alice")
    refused = api.data(token, SUBMIT_REPEATS, {"input": {"evaluation": QUICK, "count": 1}})
    assert refused["submitRepeats"] == {
        "__typename": "InvalidInput",
        "message": "count: 1; accepted: 2..20",
        "field": "count",
    }
    unmatched = {**QUICK, "device": "cuda"}
    pair = api.data(token, SUBMIT_PAIR, {"input": unmatched})["submitAccuracyPerformancePair"]
    assert pair == {"__typename": "NoMatchingAgent", "field": "device"}
    assert api.publisher.sent == []
    assert api.data(token, "{ evaluations { totalCount } }")["evaluations"]["totalCount"] == 0


def test_a_group_query_needs_a_token(api: Api) -> None:
    response = api.gql(None, '{ sweep(groupId: "g") { groupId } }')
    assert response.status_code == 401
