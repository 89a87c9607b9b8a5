"""A find-peak probe as the API shows it: the figures of its judged run, or nulls until
its run is stored."""

from __future__ import annotations

from typing import cast

from services.api.campaigns.find_peak.types import FindPeakProbeType
from services.api.graphql.evaluations.types import EvaluationType
from services.core.find_peak_search import judge
from tests.support.canned_find_peak import CannedHost


def test_a_stored_probe_shows_its_judged_figures_and_a_running_one_nulls() -> None:
    evaluation = cast(EvaluationType, "the probe's evaluation, shown as it is")
    report = CannedHost(capacity=1500.0).server("run1", 1000.0, 2.0)
    probe = judge(report, 1000.0, latency_bound_ms=50, percentile=99)
    shown = FindPeakProbeType.from_parts(1000.0, evaluation, "run1", probe)
    assert (shown.passed, shown.judged, shown.validity, shown.stability) == (
        True,
        True,
        "VALID",
        "STABLE",
    )
    assert shown.latency_ms == probe.latency_ms and shown.completed_qps == 1000.0
    assert shown.reason == probe.reason
    running = FindPeakProbeType.from_parts(1000.0, evaluation, None, None)
    assert running.run_id is None and running.latency_interval is None
    assert {running.passed, running.latency_ms, running.judged, running.reason} == {None}
