"""Find-peak, defined once for both launchers: the search's settings and their bounds, the
group record each member stores, and ``next_step``: from the runs stored so far to the
next member (the capacity estimate, a probe, or the longer run of a probe that met the
bound unjudged) or the peak.

The embedded launcher (services/campaigns/drive.py) runs each member as it is asked for;
the stack's (services/api/campaigns/find_peak/group.py) takes one step per stored run.
Both call ``next_step`` over the same stored reports, so they probe the same rates for the
same durations and reach the same verdict. The search itself is core/find_peak_search.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from services.core.campaigns.group import Done, Start
from services.core.early_stopping import MAX_SIZED_PROBE_S, duration_warning, sized_probe_s
from services.core.figures import percentile_key
from services.core.find_peak_search import DURATION_MARGIN, PeakResult, Probe, judge
from services.core.find_peak_search import next_step as search_step
from services.core.stored_report import LoadGenReport, load_loadgen_report

KIND = "find-peak"
ESTIMATE = "capacity estimate"
PROBE = "probe"
MAX_PROBES = 16
MAX_LATENCY_BOUND_MS = 3_600_000.0  # an hour: the longest bound a Server test can judge
# What a probe sets over the request's scenario settings; the estimate (Offline) has none.
SERVER_TARGETS = ("target_qps", "target_latency_ms", "latency_percentile")
NO_ESTIMATE = "the Offline capacity estimate completed no samples; see its run"


class NoEstimate(ValueError):
    """The capacity estimate completed nothing: there is no rate to start from."""

    def __init__(self) -> None:
        super().__init__(f"find-peak: {NO_ESTIMATE}")


@dataclass(frozen=True)
class SearchSettings:
    latency_bound_ms: float
    percentile: float = 99.0
    tolerance: float = 0.05
    max_probes: int = 12
    # None: an Offline run first, whose throughput is the start rate.
    start_qps: float | None = None
    # The longest a sized probe (and its longer run) may be: the launcher's, not the
    # user's (the stack's is half its longest run when that is less).
    longest_probe_s: float = MAX_SIZED_PROBE_S

    def problem(self) -> tuple[str, str] | None:
        """The first setting out of bounds: (its field in snake_case, what was given and
        what is accepted); each launcher spells the field as its users do."""
        bound = self.latency_bound_ms
        if not (math.isfinite(bound) and 0 < bound <= MAX_LATENCY_BOUND_MS):
            return "latency_bound_ms", (
                f"{bound:g}; accepted: above 0 up to {MAX_LATENCY_BOUND_MS:,.0f} ms"
            )
        try:
            percentile_key(self.percentile, "")
        except ValueError as exc:
            return "percentile", str(exc).removeprefix(": ")
        if not 0 < self.tolerance < 1:
            return "tolerance", f"{self.tolerance:g}; accepted: strictly between 0 and 1"
        if not 1 <= self.max_probes <= MAX_PROBES:
            return "max_probes", f"{self.max_probes}; accepted: 1..{MAX_PROBES}"
        start = self.start_qps
        if start is not None and not (math.isfinite(start) and start > 0):
            return "start_qps", f"{start:g}; accepted: a positive rate"
        return None


@dataclass(frozen=True)
class FindPeakGroup:
    """What each member of a search stores as its group (the stack's evaluation
    ``group_info``, the embedded run's report ``group``): one shape in both modes."""

    id: str
    role: str  # ESTIMATE or PROBE
    search: SearchSettings
    # The request the search was made from (the launcher's own, as a dict), to make the
    # next members from.
    request: dict[str, Any]
    qps: float | None = None  # a probe's target rate

    def probe(self, qps: float) -> FindPeakGroup:
        return replace(self, role=PROBE, qps=qps)

    def to_dict(self) -> dict[str, Any]:
        stored = {
            "id": self.id,
            "kind": KIND,
            "role": self.role,
            "search": asdict(self.search),
            "request": self.request,
        }
        return stored if self.qps is None else stored | {"qps": self.qps}

    @classmethod
    def from_dict(cls, info: Mapping[str, Any]) -> FindPeakGroup:
        qps = info.get("qps")
        return cls(
            id=str(info["id"]),
            role=str(info["role"]),
            search=SearchSettings(**info["search"]),
            request=dict(info["request"]),
            qps=None if qps is None else float(qps),
        )


@dataclass(frozen=True)
class NextProbe:
    qps: float
    # Seconds to run; None: the request's own duration (the user gave one).
    duration_s: float | None
    # Why this rate runs again for longer (a warning to show); None for a first probe.
    longer: str | None = None


def judged(group: FindPeakGroup, stored: Mapping[str, Any] | LoadGenReport) -> Probe:
    """A stored probe's run judged against the search's bound, at the rate it asked for."""
    report = load_loadgen_report(stored)
    qps, search = float((report.group or {})["qps"]), group.search
    return judge(
        report, qps, latency_bound_ms=search.latency_bound_ms, percentile=search.percentile
    )


def next_step(
    group: FindPeakGroup, finished: Sequence[Mapping[str, Any]]
) -> list[Start] | Done[PeakResult]:
    """The next member after ``finished`` (the group's stored reports, in the order run), or
    the result. The first probe's rate is the one given, else the capacity estimate's
    throughput (NoEstimate when it completed nothing)."""
    search, loaded = group.search, [load_loadgen_report(r) for r in finished]
    estimate = next((r for r in loaded if (r.group or {}).get("role") == ESTIMATE), None)
    start = search.start_qps
    if start is None and estimate is None:
        dropped = dict.fromkeys(SERVER_TARGETS)  # the estimate runs Offline, no target
        return [Start(group.to_dict(), scenario="offline", settings=dropped)]
    if start is None:
        start = float(estimate.perf.samples_per_second or 0.0) if estimate else 0.0
        if not start > 0:
            raise NoEstimate
    probes = [judged(group, r) for r in loaded if (r.group or {}).get("role") == PROBE]
    given_s = group.request["settings"].get("min_duration_s")
    found = step(search, start, probes, sized=given_s is None)
    if isinstance(found, PeakResult):
        return Done(found)
    warning = found.longer
    if given_s is not None and not probes:  # said once, before the first probe
        warning = duration_warning(float(given_s), start, search.percentile)
    # What a Server probe sets over the request's settings; no duration: the request's.
    settings = {
        "target_qps": found.qps,
        "target_latency_ms": search.latency_bound_ms,
        "latency_percentile": search.percentile,
    } | ({} if found.duration_s is None else {"min_duration_s": found.duration_s})
    return [Start(group.probe(found.qps).to_dict(), "server", settings, warning=warning)]


def step(
    search: SearchSettings,
    start_qps: float,
    probes: Sequence[Probe],
    *,
    sized: bool,
) -> NextProbe | PeakResult:
    """The next probe after ``probes`` (judged, in the order run), or the result.

    ``sized``: the request gave no duration, so each probe runs as long as LoadGen's early
    stopping and the stability rule need at its rate (core/early_stopping.py), at most
    ``search.longest_probe_s``; a sized probe that met the bound but went unjudged runs
    once more as long as they ask (``longer_probe_s``). The search never probes one rate
    twice in a row, so a probe at the rate of the one before it is that one's longer run
    and replaces it."""
    cap_s = search.longest_probe_s
    finals: list[Probe] = []
    rerun = False
    for probe in probes:
        rerun = bool(finals) and math.isclose(finals[-1].qps, probe.qps, rel_tol=1e-9)
        if rerun:
            finals[-1] = probe
        else:
            finals.append(probe)
    if finals and sized and not rerun:
        last = finals[-1]
        ran_s = sized_probe_s(last.qps, search.percentile, cap_s)
        longer = longer_probe_s(last, ran_s, cap_s)
        if longer is not None:
            why = (
                f"{last.qps:.1f} QPS met the bound but was not judged in {ran_s:g} s "
                f"({', '.join(last.shortfalls())}; run {last.run_id[:8]}): "
                f"run again for {longer:g} s"
            )
            return NextProbe(last.qps, longer, why)
    found = search_step(
        finals,
        start_qps=start_qps,
        latency_bound_ms=search.latency_bound_ms,
        percentile=search.percentile,
        tolerance=search.tolerance,
        max_probes=search.max_probes,
    )
    if isinstance(found, PeakResult):
        return found
    return NextProbe(found, sized_probe_s(found, search.percentile, cap_s) if sized else None)


def longer_probe_s(result: Probe, sized_s: float | None, cap_s: float) -> float | None:
    """How long to run a sized probe once more: one that met the bound but that LoadGen's
    early stopping or the stability rule could not judge (it is sized for one query over
    the bound; a jittery host puts more there), as long as they ask, with the arrivals'
    margin, at most ``cap_s``. None for a probe judged, failed, not sized (the user's
    duration is kept), already at the cap, or with nothing asked for."""
    if sized_s is None or not result.passed or result.judged:
        return None
    if result.duration_needed_s is None or sized_s >= cap_s:
        return None
    # What they ask for is past what ran (LoadGen counts the queries still missing).
    return min(DURATION_MARGIN * result.duration_needed_s, cap_s)


def curve_point(group: Mapping[str, Any], settings: Mapping[str, Any]) -> tuple[str, float] | None:
    """A probe's target QPS, for a report's curve (curves.py); the estimate has none."""
    target = (settings.get("scenario") or {}).get("target_qps")
    if group.get("role") != ESTIMATE and target is not None:
        return "target QPS", float(target)
    return None


def is_probe(group: Mapping[str, Any]) -> bool:
    """Whether a stored group record is a find-peak probe's (advice judges those)."""
    return group.get("kind") == KIND and group.get("role") == PROBE
