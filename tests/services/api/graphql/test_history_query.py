"""GraphQL history(model, figure, system): twelve stored runs of one agent's system whose
thread count drops in the middle give one series with the change point at that run, naming
the change; a bad figure is a typed refusal; only the caller's runs are read."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select

from shared.db.accounts import User
from shared.db.models import Run
from shared.db.session import session_scope
from tests.services.api.conftest import Api
from tests.support.rows import evaluation_row

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


def _report(run_id: str, index: int, sps: float, threads: int) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "created_at": f"2026-12-01T00:{index:02d}:00+00:00",
        "model": {"name": "tiny-cnn", "version": "0.1.0"},
        "framework": {"name": "null", "version": "0.1.0"},
        "agent_id": "host/inference.null.cpu/7",
        "settings": {"backend_options": {"device": "cpu", "intra_op_threads": threads}},
        "performance": {
            "scenario": "Offline",
            "samples_per_second": sps,
            "latency": {"mean_ns": 1e6, "percentiles_ns": {"p99": 1e6}},
            "validity": {"result": "VALID"},
        },
        "host": {"busy": False},
        "environment": {"python": "3.11.9", "packages": {"numpy": "2.3.0"}},
    }


def _store_series(api: Api, user: str) -> list[str]:
    """Twelve runs: two threads at ~200 samples/s, then one thread at ~100 from the seventh."""
    ids = []
    with session_scope(api.settings.effective_database_url) as session:
        owner = session.scalars(select(User.id).where(User.name == user)).one()
        for index in range(12):
            evaluation = evaluation_row(owner, model_name="tiny-cnn")
            session.add(evaluation)
            run_id = str(uuid.uuid4())
            threads = 2 if index < 6 else 1
            sps = (200.0 if threads == 2 else 100.0) * (1 + 0.01 * (index % 3 - 1))
            report = _report(run_id, index, sps, threads)
            session.add(
                Run(
                    id=run_id,
                    evaluation_id=evaluation.id,
                    model_name="tiny-cnn",
                    model_version="0.1.0",
                    framework="null",
                    framework_version="0.1.0",
                    scenario="Offline",
                    mode="performance",
                    batch_size=1,
                    dataset="synthetic",
                    validity="VALID",
                    samples_per_second=sps,
                    manifest={},
                    settings=report["settings"],
                    environment=report["environment"],
                    report=report,
                    log_prefix=f"runs/{run_id}",
                )
            )
            ids.append(run_id)
    return ids


def test_the_change_point_is_at_the_run_where_threads_changed(api: Api) -> None:
    token = api.token("ada")
    ids = _store_series(api, "ada")
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
