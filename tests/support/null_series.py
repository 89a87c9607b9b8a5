"""Stored runs of the null backend at a fixed service time, for the history and the gate:
its figure is set by the service time, so a series moves where the test moves it.

This machine is shared by other processes while tests run, so a run here is often BUSY;
``set_busy`` records the host as the test needs it (quiet, or BUSY), so that what the test
checks does not depend on the load at the time."""

from __future__ import annotations

from typing import Any

from services.cli.bench_options import BenchOptions
from services.embedded.bench import run_bench
from shared.db.models import Run
from shared.db.session import session_scope
from shared.settings import Settings

TINY = "tests/fixtures/tiny_cnn.yaml"


def null_run(settings: Settings, service_ms: float, *, busy: bool = False) -> dict[str, Any]:
    """One short Offline run of the tiny model on the null backend, stored; its report."""
    request = BenchOptions(
        model=TINY, framework="null", duration=0.6, samples=16,
        option=[f"service_time_ms={service_ms:g}"],
    ).request()  # fmt: skip
    report = run_bench(request, settings)
    return set_busy(settings, report["run_id"], busy)


def set_busy(settings: Settings, run_id: str, busy: bool) -> dict[str, Any]:
    """The stored run's host recorded as BUSY or quiet; its report as stored now."""
    with session_scope(settings.effective_database_url) as session:
        run = session.get(Run, run_id)
        assert run is not None
        host = dict(run.report.get("host") or {}) | {"busy": busy}
        run.report = dict(run.report) | {"host": host}
        return dict(run.report)
