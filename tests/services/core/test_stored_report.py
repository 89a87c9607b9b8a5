"""A stored report reads back typed (services/core/stored_report.py): the same sections as the
RunReport it was written from, an older report's missing sections as None, a workload's
outcome under its kind."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from services.core.run_report import RunReport, json_safe
from services.core.stored_report import LoadGenReport, OutcomeReport, load_report

TINY = "tests/fixtures/tiny_cnn.yaml"


def test_a_stored_report_loads_with_the_sections_it_was_written_with(
    null_run_report: dict[str, Any],
) -> None:
    stored = null_run_report
    written = RunReport.from_dict(stored)
    report = load_report(stored)
    assert isinstance(report, LoadGenReport)
    m = written.measurement
    # Compared as stored (NaN is null), since NaN != NaN.
    for section, expected in [
        (report.performance, m.performance),
        (report.stability, m.stability),
        (report.sut_latency, m.sut_latency),
        (report.settings, written.settings),
    ]:
        assert section is not None
        assert json_safe(asdict(section)) == json_safe(asdict(expected))
    assert report.accuracy is None and stored["accuracy"] is None
    assert report.validity == written.validity
    assert report.run_id == written.run_id and report.log_keys == written.logs
    assert report.environment == stored["environment"] and report.host == stored["host"]
    assert math.isnan(report.perf.qps)  # Offline: stored null, read NaN


def test_an_older_report_reads_its_missing_sections_as_none() -> None:
    # A row stored before stability, confidence, settings and most figures were recorded.
    old = {
        "run_id": "r1",
        "performance": {
            "scenario": "Offline",
            "validity": {"result": "INVALID", "reasons": ["min duration not satisfied"]},
            "samples_per_second": 12.5,
            "latency": {"mean_ns": None, "percentiles_ns": {"p50": 2e6, "p99": None}},
        },
        "stability": {},
        "unknown_later_field": 1,
    }
    report = load_report(old)
    assert isinstance(report, LoadGenReport)
    assert report.stability is None and report.settings is None and report.accuracy is None
    assert report.confidence is None and report.profile is None and report.sut_latency is None
    perf = report.perf
    assert perf.samples_per_second == 12.5 and perf.validity.reasons == [
        "min duration not satisfied"
    ]
    assert math.isnan(perf.latency.mean_ns) and math.isnan(perf.qps)
    assert perf.latency.percentiles_ns["p50"] == 2e6
    assert math.isnan(perf.latency.percentiles_ns["p99"])
    assert report.validity == "INVALID" and report.stability_verdict is None
    assert report.failed_samples == 0 and report.errors == []
    # No performance section at all: an empty one to read, NaN figures, no verdict.
    bare = load_report({"run_id": "r2"})
    assert isinstance(bare, LoadGenReport) and bare.performance is None
    assert bare.validity == "" and math.isnan(bare.perf.samples_per_second)


def test_a_workload_outcome_reads_as_its_kind() -> None:
    stored = {"kind": "training", "run_id": "t", "training": {"statistics": {"steps": 3}}}
    report = load_report(stored)
    assert isinstance(report, OutcomeReport)
    assert report.kind == "training" and report.document == {"statistics": {"steps": 3}}
    assert load_report(report) is report
    # The host beside the document is the union's ``host`` (the fan-out row reads it).
    busy = {"kind": "training", "training": {}, "host": {"busy": True}}
    assert load_report(busy).host == {"busy": True}
