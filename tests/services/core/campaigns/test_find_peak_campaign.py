"""Find-peak defined once (core/campaigns/find_peak.py): the bounds of a search, its group
record, and ``step``: the probes both launchers run, the longer run of a sized probe that
met the bound unjudged included."""

from __future__ import annotations

import math

import pytest

from services.core.campaigns.find_peak import (
    FindPeakGroup,
    NextProbe,
    SearchSettings,
    longer_probe_s,
    step,
)
from services.core.early_stopping import MAX_SIZED_PROBE_S, sized_probe_s
from services.core.find_peak_search import DURATION_MARGIN, PeakResult, Probe, judge
from tests.support.canned_find_peak import JITTER_QUERIES, CannedHost


def _run(search: SearchSettings, host: CannedHost, *, sized: bool) -> tuple[PeakResult, list[str]]:
    """``step`` driven to the end against ``host``: the result and the warnings given."""
    probes: list[Probe] = []
    warnings = []
    while not isinstance(found := step(search, 1000.0, probes, sized=sized), PeakResult):
        if found.longer is not None:
            warnings.append(found.longer)
        report = host.server(f"run{len(probes)}", found.qps, found.duration_s or 2.0)
        probes.append(judge(report, found.qps, latency_bound_ms=50, percentile=search.percentile))
    return found, warnings


def test_a_sized_probe_that_met_the_bound_unjudged_runs_once_more_as_long_as_asked() -> None:
    host = CannedHost(capacity=1500.0, jittery={1000.0})
    result, warnings = _run(SearchSettings(50, tolerance=0.5, max_probes=2), host, sized=True)
    sized = sized_probe_s(1000.0, 99)
    queries = int(1000.0 * sized)
    longer = DURATION_MARGIN * (queries + JITTER_QUERIES) / 1000.0
    assert host.ran == [(1000.0, sized), (1000.0, longer), (2000.0, sized_probe_s(2000.0, 99))]
    assert len(warnings) == 1 and "1000.0 QPS met the bound but was not judged" in warnings[0]
    # The longer run replaced the first in the search: two probes, the peak judged.
    assert [p.qps for p in result.curve] == [1000.0, 2000.0]
    assert result.peak is not None and result.peak.qps == 1000.0 and result.peak.judged


def test_the_longer_run_is_asked_once_and_never_of_a_probe_the_user_sized() -> None:
    search = SearchSettings(50, tolerance=0.5, max_probes=1)
    # A host that leaves 1000/s unjudged every time: one longer run, then "no valid peak".
    always = CannedHost(capacity=1500.0, jittery={1000.0}, every_time=True)
    result, warnings = _run(search, always, sized=True)
    assert len(always.ran) == 2 and len(warnings) == 1, always.ran  # the run, its longer one
    assert result.peak is None and result.verdict == "no valid peak"
    # --duration given: that duration, no longer run.
    fixed = CannedHost(capacity=1500.0, jittery={1000.0})
    result, warnings = _run(search, fixed, sized=False)
    assert fixed.ran == [(1000.0, 2.0)] and warnings == [] and result.peak is None


def test_the_launchers_cap_bounds_sized_probes_and_their_longer_runs() -> None:
    host = CannedHost(capacity=1500.0, jittery={1000.0})
    search = SearchSettings(50, tolerance=0.5, max_probes=1, longest_probe_s=0.5)
    _run(search, host, sized=True)
    assert host.ran == [(1000.0, 0.5)], host.ran  # sized to the cap: no longer run past it
    host = CannedHost(capacity=1500.0, jittery={1000.0})
    search = SearchSettings(50, tolerance=0.5, max_probes=1, longest_probe_s=1.5)
    _run(search, host, sized=True)
    assert host.ran == [(1000.0, sized_probe_s(1000.0, 99)), (1000.0, 1.5)], host.ran


def _probe(passed: bool, validity: str, needed: float | None) -> Probe:
    return Probe(100.0, passed, 5.0, 100.0, 100.0, validity, "STABLE", "r", "", [], [], 0, needed)


def test_a_judged_or_failed_or_unsized_probe_is_not_run_again() -> None:
    cap = MAX_SIZED_PROBE_S
    assert longer_probe_s(_probe(True, "INVALID", 12.0), 8.0, cap) == DURATION_MARGIN * 12.0
    assert longer_probe_s(_probe(True, "INVALID", 12.0), None, cap) is None  # --duration
    assert longer_probe_s(_probe(True, "VALID", None), 8.0, cap) is None  # judged
    assert longer_probe_s(_probe(False, "INVALID", 12.0), 8.0, cap) is None  # over the bound
    assert longer_probe_s(_probe(True, "INVALID", None), 8.0, cap) is None  # nothing asked
    assert longer_probe_s(_probe(True, "INVALID", 10_000.0), 8.0, cap) == cap  # the cap
    assert longer_probe_s(_probe(True, "INVALID", 10_000.0), cap, cap) is None


@pytest.mark.parametrize(
    ("search", "field", "said"),
    [
        (SearchSettings(0), "latency_bound_ms", "0; accepted: above 0 up to 3,600,000 ms"),
        (SearchSettings(math.inf), "latency_bound_ms", "inf; accepted"),
        (SearchSettings(50, percentile=98), "percentile", "98 is not reported by LoadGen"),
        (SearchSettings(50, tolerance=1), "tolerance", "1; accepted: strictly between 0 and 1"),
        (SearchSettings(50, max_probes=17), "max_probes", "17; accepted: 1..16"),
        (SearchSettings(50, start_qps=-1), "start_qps", "-1; accepted: a positive rate"),
    ],
)
def test_each_setting_out_of_bounds_is_named(search: SearchSettings, field: str, said: str) -> None:
    problem = search.problem()
    assert problem is not None and problem[0] == field and problem[1].startswith(said), problem


def test_the_group_record_reads_back_as_written_and_a_probe_adds_its_rate() -> None:
    group = FindPeakGroup("g", "capacity estimate", SearchSettings(50), {"model": "m"})
    stored = group.to_dict()
    assert set(stored) == {"id", "kind", "role", "search", "request"}
    assert stored["kind"] == "find-peak" and stored["search"]["latency_bound_ms"] == 50
    probe = group.probe(250.0)
    assert probe.to_dict() == stored | {"role": "probe", "qps": 250.0}
    assert FindPeakGroup.from_dict(probe.to_dict() | {"stopped": "why"}) == probe
    first = step(SearchSettings(50), 250.0, [], sized=False)
    assert first == NextProbe(250.0, None)
