"""Stored runs for the tests of the one rule's views (services/core/shown_figures.py): a
LoadGen report whose host was busy, and one of an Offline run, stored as rows."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session

from services.aggregator.repository import metrics_from_report
from shared.db.models import Metric, Run

BUSY_HOST = {
    "busy": True,
    "load": {
        "busy": True,
        "other_cpu_share": 0.55,
        "reason": "busy: other processes used 1.10 CPU-s per s (55% of 2 CPUs) during the run",
    },
}
QUIET_HOST = {"busy": False, "load": {"busy": False, "reason": "quiet: others used 1% of 2 CPUs"}}


def stored_report(scenario: str, *, host: dict[str, Any] | None = None) -> dict[str, Any]:
    """A LoadGen report as stored: 35.9 samples/s, p90 8.3 ms, intervals for both."""
    return {
        "run_id": str(uuid.uuid4()),
        "scenario": scenario,
        "mode": "performance",
        "model": {"name": "tiny-cnn", "version": "0.1.0"},
        "framework": {"name": "null", "version": "0"},
        "dataset": {"name": "synthetic", "samples": 64},
        "batch_size": 1,
        "performance": {
            "scenario": scenario,
            "validity": {"result": "VALID", "reasons": []},
            "latency": {
                "count": 100,
                "min_ns": 1e6,
                "mean_ns": 5e6,
                "max_ns": 9e6,
                "percentiles_ns": {"p50": 4e6, "p90": 8.3e6, "p99": None},
            },
            "samples_per_second": 35.9,
        },
        "stability": {"verdict": "UNSTABLE", "reasons": ["throughput spread 30%"]},
        "confidence": {
            "basis": "windows",
            "units": 10,
            "figures": {
                "samples_per_second": {"estimate": 36.0, "low": 34.1, "high": 37.2},
                "latency_p90": {"estimate": 8.2, "low": 7.9, "high": 8.6},
                "latency_p50": {"estimate": 4.0, "reason": "too few samples"},
            },
        },
        "host": host if host is not None else QUIET_HOST,
    }


def store_run(session: Session, report: dict[str, Any], evaluation_id: str | None = None) -> str:
    """``report`` as a stored run row with its metrics, as the aggregator keeps one."""
    session.add(
        Run(
            id=report["run_id"],
            evaluation_id=evaluation_id,
            model_name=report["model"]["name"],
            model_version=report["model"]["version"],
            framework="null",
            framework_version="0",
            scenario=report["scenario"],
            mode="performance",
            batch_size=1,
            dataset="synthetic",
            validity="VALID",
            samples_per_second=35.9,
            manifest={},
            settings={},
            environment={},
            report=report,
            log_prefix="",
            metrics=[Metric(name=n, value=v, unit=u) for n, v, u in metrics_from_report(report)],
        )
    )
    return str(report["run_id"])
