"""A stack's stored series for the history's readers (GraphQL ``history``, ``history
--server``, ``gate --server``): twelve runs of a model (the tiny one unless named) on one
agent's system, owned by ``user``, whose thread count drops from two to one at the seventh
run and its throughput halves with it. Stored rows, not measured ones: what the API reads is
the rows, and a real run's figure on this shared machine could not be made to halve on cue."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select

from shared.db.accounts import User
from shared.db.models import Run
from shared.db.session import session_scope
from shared.settings import Settings
from tests.support.rows import evaluation_row


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
        "stability": {
            "verdict": "STABLE",
            "windows": [
                {"samples_per_second": sps * (1 + d)} for d in (0, 0.01, -0.01, 0.01, -0.01)
            ],
        },
        "host": {"busy": False},
        "environment": {"python": "3.11.9", "packages": {"numpy": "2.3.0"}},
    }


def store_series(settings: Settings, user: str, model: str = "tiny-cnn") -> list[tuple[str, str]]:
    """(run id, evaluation id) of twelve runs: two threads at ~200 samples/s, then one
    thread at ~100 from the seventh."""
    ids = []
    with session_scope(settings.effective_database_url) as session:
        owner = session.scalars(select(User.id).where(User.name == user)).one()
        for index in range(12):
            run_id = str(uuid.uuid4())
            evaluation = evaluation_row(
                owner, model_name=model, run_id=run_id, scenario={"scenario": "offline"}
            )
            session.add(evaluation)
            threads = 2 if index < 6 else 1
            sps = (200.0 if threads == 2 else 100.0) * (1 + 0.01 * (index % 3 - 1))
            report = _report(run_id, index, sps, threads) | {"model": {"name": model}}
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
            ids.append((run_id, evaluation.id))
    return ids
