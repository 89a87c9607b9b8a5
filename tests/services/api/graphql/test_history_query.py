"""GraphQL history(model, figure, system): twelve stored runs of one agent's system whose
thread count drops in the middle give one series with the change point at that run, naming
the change; a bad figure is a typed refusal; only the caller's runs are read."""

from __future__ import annotations

from tests.services.api.conftest import Api
from tests.support.history_rows import store_series

QUERY = """
query H($figure: String!) {
  history(model: "tiny-cnn", figure: $figure) {
    __typename
    ... on History { figure series { system unit points { runId value busy changes }
                     changePoints { runId before after change band better changes } } }
    ... on InvalidInput { message field accepted }
  }
}
"""


def test_the_change_point_is_at_the_run_where_threads_changed(api: Api) -> None:
    token = api.token("ada")
    ids = [run for run, _ in store_series(api.settings, "ada")]
    found = api.data(token, QUERY, {"figure": "throughput"})["history"]
    assert found["__typename"] == "History" and found["figure"] == "samples_per_second"
    (series,) = found["series"]
    assert series["system"] == "host/inference.null.cpu, null on cpu, Offline"
    assert [p["runId"] for p in series["points"]] == ids
    (change,) = series["changePoints"]
    assert change["runId"] == ids[6] and change["changes"] == ["threads: 2 -> 1"]
    assert -0.55 < change["change"] < -0.45 and change["better"] is False
    # Another user sees none of ada's runs.
    other = api.data(api.token("bob"), QUERY, {"figure": "p99"})["history"]
    assert other["series"] == []


def test_a_bad_figure_is_refused_by_field(api: Api) -> None:
    found = api.data(api.token("ada"), QUERY, {"figure": "p42"})["history"]
    assert found["__typename"] == "InvalidInput" and found["field"] == "figure"
    assert "p99" in found["accepted"] and "'p42' is not a figure" in found["message"]
