"""Migrations 0011 and 0012 keep what was stored: a bricks or training evaluation of
before becomes that workload with its options, an inference one "loadgen"; the group
kinds "ddp" and "submission" get their names in evaluations and in runs' reports; and
both go back down. On SQLite and on Postgres (their JSON SQL differs)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Engine, text

from shared.db.migrations import upgrade_engine

NOW = "2026-11-27 12:00:00"
EVALUATION_COLUMNS = (
    "id, owner_id, state, reason, model_name, model_version, manifest, framework, device, "
    "scenario, batch_size, dataset, seed, trace_level, constraints, backend_options, queue, "
    "shards_total, shards_ready, preprocess_reused, created_at, updated_at, bricks, training, "
    "group_id, group_info"
)
RUN_COLUMNS = (
    "id, created_at, model_name, model_version, framework, framework_version, scenario, "
    "mode, batch_size, dataset, validity, preprocess_reused, manifest, settings, environment, "
    "report, log_prefix"
)


def _evaluation(
    connection: Any, name: str, *, bricks: Any = None, training: Any = None, group: Any = None
) -> None:
    row = {
        "id": name, "owner_id": 1, "state": "SUCCEEDED", "reason": "", "model_name": "m",
        "model_version": "1", "manifest": "{}", "framework": "torch", "device": "cpu",
        "scenario": "{}", "batch_size": 1, "dataset": "synthetic", "seed": 0,
        "trace_level": "NONE", "constraints": "{}", "backend_options": "{}", "queue": "q",
        "shards_total": 0, "shards_ready": 0, "preprocess_reused": False, "created_at": NOW,
        "updated_at": NOW, "bricks": json.dumps(bricks) if bricks is not None else None,
        "training": json.dumps(training) if training is not None else None,
        "group_id": "g" if group else None,
        "group_info": json.dumps(group) if group is not None else None,
    }  # fmt: skip
    names = ", ".join(f":{c.strip()}" for c in EVALUATION_COLUMNS.split(","))
    connection.execute(
        text(f"INSERT INTO evaluations ({EVALUATION_COLUMNS}) VALUES ({names})"), row
    )


def _run(connection: Any, name: str, report: dict[str, Any]) -> None:
    row = {
        "id": name, "created_at": NOW, "model_name": "m", "model_version": "1",
        "framework": "torch", "framework_version": "2", "scenario": "offline",
        "mode": "performance", "batch_size": 1, "dataset": "d", "validity": "VALID",
        "preprocess_reused": False, "manifest": "{}", "settings": "{}", "environment": "{}",
        "report": json.dumps(report), "log_prefix": "p",
    }  # fmt: skip
    names = ", ".join(f":{c.strip()}" for c in RUN_COLUMNS.split(","))
    connection.execute(text(f"INSERT INTO runs ({RUN_COLUMNS}) VALUES ({names})"), row)


def _loaded(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def test_stored_kinds_survive_the_upgrade_and_the_downgrade(engine: Engine) -> None:
    upgrade_engine(engine, "0010")
    with engine.begin() as connection:
        connection.execute(
            text("INSERT INTO users (id, name, created_at) VALUES (1, 'u', :now)"), {"now": NOW}
        )
        _evaluation(connection, "plain")
        _evaluation(connection, "bricked", bricks={"granularity": 2})
        _evaluation(connection, "ranked", training={"steps": 3}, group={"kind": "ddp", "rank": 0})
        _evaluation(connection, "paired", group={"kind": "submission", "role": "accuracy"})
        _run(connection, "r-ddp", {"group": {"kind": "ddp", "id": "g"}})
        _run(connection, "r-sweep", {"group": {"kind": "sweep", "id": "g"}})
    upgrade_engine(engine, "head")
    with engine.connect() as connection:
        rows = {
            r.id: (r.workload, _loaded(r.workload_options), _loaded(r.group_info))
            for r in connection.execute(
                text("SELECT id, workload, workload_options, group_info FROM evaluations")
            )
        }
        reports = {
            r.id: _loaded(r.report)["group"]["kind"]
            for r in connection.execute(text("SELECT id, report FROM runs"))
        }
    assert rows["plain"] == ("loadgen", None, None)
    assert rows["bricked"] == ("bricks", {"granularity": 2}, None)
    assert rows["ranked"] == ("training", {"steps": 3}, {"kind": "training-scaling", "rank": 0})
    assert rows["paired"][2] == {"kind": "accuracy-performance-pair", "role": "accuracy"}
    assert reports == {"r-ddp": "training-scaling", "r-sweep": "sweep"}

    from alembic import command

    from shared.db.migrations import alembic_config

    with engine.connect() as connection:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.downgrade(config, "0010")
        connection.commit()
        back = {
            r.id: (_loaded(r.bricks), _loaded(r.training), _loaded(r.group_info))
            for r in connection.execute(
                text("SELECT id, bricks, training, group_info FROM evaluations")
            )
        }
    assert back["bricked"] == ({"granularity": 2}, None, None)
    assert back["ranked"] == (None, {"steps": 3}, {"kind": "ddp", "rank": 0})
    assert back["paired"][2] == {"kind": "submission", "role": "accuracy"}
