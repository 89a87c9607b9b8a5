"""A report's curve point comes from the group kind's own module (curve_point), found by
the kind it stored: a sweep point's parameter, a find-peak probe's target QPS."""

from __future__ import annotations

from services.analysis.shared_report import curve_x
from services.core.campaigns import find_peak, sweep
from services.core.campaigns.curves import curve_points
from services.core.campaigns.find_peak import is_probe


def _report(group: dict[str, object], target_qps: float | None = None) -> dict[str, object]:
    scenario = {} if target_qps is None else {"target_qps": target_qps}
    return {"group": group, "settings": {"scenario": scenario}}


def test_the_kinds_that_vary_a_setting_declare_their_point() -> None:
    assert curve_points() == {sweep.KIND: sweep.curve_point, find_peak.KIND: find_peak.curve_point}


def test_a_report_is_placed_on_its_kinds_curve() -> None:
    point = {"kind": sweep.KIND, "id": "s", "parameter": "batch_size", "value": 8}
    assert curve_x(_report(point)) == ("batch_size", 8.0)
    assert curve_x(_report({**point, "value": None})) is None
    probe = {"kind": find_peak.KIND, "id": "f", "role": find_peak.PROBE}
    assert curve_x(_report(probe, 250.0)) == ("target QPS", 250.0)
    estimate = {**probe, "role": find_peak.ESTIMATE}
    assert curve_x(_report(estimate, 250.0)) is None
    # A kind that varies nothing, and a run of no group.
    assert curve_x(_report({"kind": "repeats", "id": "r", "index": 0}, 250.0)) is None
    assert curve_x({"settings": {"scenario": {"target_qps": 5}}}) is None


def test_advice_reads_a_find_peak_probe_by_its_record() -> None:
    assert is_probe({"kind": find_peak.KIND, "role": find_peak.PROBE})
    assert not is_probe({"kind": find_peak.KIND, "role": find_peak.ESTIMATE})
    assert not is_probe({"kind": sweep.KIND, "role": find_peak.PROBE})
