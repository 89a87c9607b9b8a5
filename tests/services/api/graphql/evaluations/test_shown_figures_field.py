"""Run.shownFigures serves the one rule (services/core/shown_figures.py) to the web pages:
a busy run's figures each carry BUSY with how busy; an Offline run has no latency."""

from __future__ import annotations

from collections.abc import Callable

from shared.db.session import session_scope
from tests.services.api.conftest import Api
from tests.support.shown_runs import BUSY_HOST, store_run, stored_report

QUICK = {"model": "resnet18", "framework": "null", "settings": {"minDurationS": 0.3}}
SHOWN = """query($id: String!) { evaluation(id: $id) { runs {
  shownFigures { name value unit low high intervalNote validity stability busy busyNote }
} } }"""


def test_the_field_carries_busy_and_leaves_out_offline_latencies(
    api: Api, submit_query: Callable[[], str]
) -> None:
    api.add_agent()
    alice = api.token("alice")
    runs = {}
    for scenario, host in (("single_stream", BUSY_HOST), ("offline", {})):
        created = api.data(alice, submit_query(), {"input": QUICK})["submitEvaluation"]
        with session_scope(api.settings.effective_database_url) as session:
            store_run(session, stored_report(scenario, host=host), created["id"])
        (run,) = api.data(alice, SHOWN, {"id": created["id"]})["evaluation"]["runs"]
        runs[scenario] = run["shownFigures"]
    busy = runs["single_stream"]
    assert {f["name"] for f in busy} >= {"samples_per_second", "latency_p90"}
    assert all(f["busy"] is True and "55% of 2 CPUs" in f["busyNote"] for f in busy)
    p90 = next(f for f in busy if f["name"] == "latency_p90")
    assert (p90["value"], p90["low"], p90["high"], p90["unit"]) == (8.3, 7.9, 8.6, "ms")
    assert [f["name"] for f in runs["offline"]] == ["samples_per_second"]
    assert runs["offline"][0]["busy"] is None and runs["offline"][0]["stability"] == "UNSTABLE"
