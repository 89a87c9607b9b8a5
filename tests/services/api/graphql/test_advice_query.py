"""GraphQL advice(model, latencyBoundMs, percentile): typed refusals, and what it says when a
user has no runs of the model (runs are the caller's own: their evaluations')."""

from __future__ import annotations

from tests.services.api.conftest import Api

QUERY = """
query A($p: Float!, $b: Float!) {
  advice(model: "resnet18", latencyBoundMs: $b, percentile: $p) {
    __typename
    ... on Advice { cheapest conclusion missing systems { system status command } }
    ... on InvalidInput { message field accepted }
  }
}
"""


def test_a_bad_percentile_is_refused_by_field(api: Api) -> None:
    token = api.token("ada")
    found = api.data(token, QUERY, {"p": 98.0, "b": 100.0})["advice"]
    assert found["__typename"] == "InvalidInput" and found["field"] == "percentile"
    assert "99.9" in found["accepted"] and "98 is not reported" in found["message"]
    bound = api.data(token, QUERY, {"p": 99.0, "b": -5.0})["advice"]
    assert bound["__typename"] == "InvalidInput" and bound["field"] == "latencyBoundMs"


def test_no_runs_of_the_model_say_so(api: Api) -> None:
    found = api.data(api.token("ada"), QUERY, {"p": 99.0, "b": 100.0})["advice"]
    assert found["__typename"] == "Advice"
    assert found["cheapest"] is None and found["systems"] == []
    assert found["conclusion"].startswith("no stored runs of resnet18")
