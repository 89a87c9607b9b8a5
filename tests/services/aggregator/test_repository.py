"""The repository stores what a report holds, and leaves out figures LoadGen did not give."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from services.aggregator.repository import (
    RunRecord,
    get_run,
    json_safe,
    list_runs,
    metrics_from_report,
    save_run,
)
from shared.db.session import session_scope


def _report(latency_ns: float) -> dict[str, Any]:
    percentiles = {k: latency_ns for k in ("p50", "p90", "p95", "p97", "p99", "p999")}
    return {
        "performance": {
            "samples_per_second": 12.5,
            "qps": math.nan,  # Offline: LoadGen's summary has no QPS
            "latency": {
                "min_ns": latency_ns,
                "mean_ns": latency_ns,
                "max_ns": latency_ns,
                "percentiles_ns": percentiles,
            },
            "validity": {"result": "VALID"},
        },
        "accuracy": {"top1": 98.0, "top5": None},
    }


def _record(run_id: str, report: dict[str, Any]) -> RunRecord:
    return RunRecord(
        id=run_id,
        model_name="m",
        model_version="1.0.0",
        framework="null",
        framework_version="0",
        scenario="offline",
        mode="accuracy",
        batch_size=1,
        dataset="synthetic",
        validity="VALID",
        samples_per_second=math.nan,
        manifest={},
        settings={"x": math.inf},
        environment={},
        report=report,
        log_prefix=f"runs/{run_id}/",
    )


def test_missing_figures_are_left_out_in_memory_and_once_stored() -> None:
    names = {name for name, _, _ in metrics_from_report(_report(math.nan))}
    assert names == {"samples_per_second", "valid", "top1"}
    # After json_safe (as stored), NaN is None and must be skipped the same way.
    assert metrics_from_report(json_safe(_report(math.nan))) == metrics_from_report(
        _report(math.nan)
    )
    full = {name: value for name, value, _ in metrics_from_report(_report(2e6))}
    assert full["latency_p90"] == 2.0 and full["latency_min"] == 2.0


def test_save_run_is_idempotent_and_stores_strict_json(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with session_scope(url) as session:
        assert save_run(session, _record("run-1", _report(math.nan))) is True
        # A redelivery changes nothing.
        assert save_run(session, _record("run-1", _report(5e6))) is False
    with session_scope(url) as session:
        run = get_run(session, "run-1")
        assert run.samples_per_second is None
        assert run.settings == {"x": None}
        assert run.report["performance"]["qps"] is None
        assert {m.name for m in run.metrics} == {"samples_per_second", "valid", "top1"}
        assert [r.id for r in list_runs(session)] == ["run-1"]


def test_the_cold_start_is_a_figure_of_its_own_when_the_report_has_it() -> None:
    from services.aggregator.repository import metrics_from_report

    timed = {"timings": {"model_load_s": 1.25, "loadgen_s": 8.0}}
    assert ("model_load", 1.25, "s") in metrics_from_report(timed)
    assert not [row for row in metrics_from_report({}) if row[0] == "model_load"]
