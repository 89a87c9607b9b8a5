"""Find-peak on generative runs: the highest Server rate (target_qps) whose TTFT and TPOT at
the bounds' percentile meet the objectives and that LoadGen judges VALID.

The search is the one every find-peak runs (services/core/campaigns/find_peak.py ``step``
over core/find_peak_search.py): the same bracketing and bisection, the same probes sized
for LoadGen's early stopping and the stability rule, the same longer run of a probe that
met the bounds unjudged, the same verdict. What differs is the judging of one probe, read
here from the run's document (run.py): both of LoadGen's token latencies against their
bounds, the SUT keeping up, no failed request; LoadGen's validity (which includes the
TTFT/TPOT constraints) and the stability verdict decide whether it can be the peak.

``next_run`` is pure: from the documents run so far to the next run's options or the
result, so a launcher that stores its runs can replay it; ``find_peak`` runs it here.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from services.core.campaigns.find_peak import ESTIMATE, PROBE, SearchSettings, step
from services.core.early_stopping import MAX_SIZED_PROBE_S, duration_warning
from services.core.find_peak_search import KEEP_UP_SLACK, PeakResult, Probe
from services.core.stability import MIN_SERVER_SAMPLES, WINDOWS
from services.workloads.generative.bounds import TokenBounds
from services.workloads.generative.options import GenerativeOptions

KIND = "generative-find-peak"
# The percentiles both LoadGen's token figures and ours are reported at.
PERCENTILES = (50.0, 90.0, 99.0)
_MORE_QUERIES = re.compile(r"at least (\d+) more queries")

Measure = Callable[[GenerativeOptions], dict[str, Any]]


@dataclass(frozen=True)
class GenerativeSearch:
    """The search's own settings; the bounds and everything else come from the run's."""

    tolerance: float = 0.1
    max_probes: int = 12
    start_qps: float | None = None  # None: an Offline run first, its requests/s
    # Every probe's seconds; None: each sized from its rate (early stopping, stability).
    duration_s: float | None = None
    longest_probe_s: float = MAX_SIZED_PROBE_S

    def settings(self, bounds: TokenBounds) -> SearchSettings:
        # The core search names one bound; the TTFT's (both are judged in judge_probe).
        return SearchSettings(
            latency_bound_ms=bounds.ttft_ms,
            percentile=bounds.percentile,
            tolerance=self.tolerance,
            max_probes=self.max_probes,
            start_qps=self.start_qps,
            longest_probe_s=self.longest_probe_s,
        )


def checked_bounds(base: GenerativeOptions, search: GenerativeSearch) -> TokenBounds:
    """The run's bounds, refused with the field to change where the search cannot use them."""
    if base.scenario != "server":
        raise ValueError(f"scenario: find-peak probes Server runs; {base.scenario} was given")
    bounds = base.token_bounds()
    assert bounds is not None  # a Server run always has bounds (a preset by default)
    if bounds.percentile not in PERCENTILES:
        accepted = ", ".join(f"{p:g}" for p in PERCENTILES)
        raise ValueError(f"percentile: {bounds.percentile:g}; accepted: {accepted}")
    problem = search.settings(bounds).problem()
    if problem is not None:
        raise ValueError(f"{problem[0]}: {problem[1]}")
    return bounds


def _figure(document: Mapping[str, Any], name: str) -> float:
    """LoadGen's figure where it reports one (the judged one), else ours; NaN if neither."""
    value = document["loadgen"]["figures"].get(name)
    if value is None:
        value = (document["figures"].get(name) or {}).get("estimate")
    return math.nan if value is None else float(value)


def judge_probe(document: Mapping[str, Any], qps: float, run_id: str = "") -> Probe:
    """Pass or fail one generative Server run against its TTFT and TPOT bounds."""
    bounds, verdict = document["bounds"], document["loadgen"]
    key = f"p{float(bounds['percentile']):g}"
    ttft, tpot = _figure(document, f"ttft_{key}"), _figure(document, f"tpot_{key}")
    completed = _figure(document, "requests_per_s")
    scheduled = float(document.get("target_qps") or qps)
    queries = float(document["requests"]["issued"])
    # A SUT that keeps up still drains its last requests after the schedule ends.
    schedule_s = queries / scheduled if scheduled > 0 else 0.0
    drain_s = _figure(document, "latency_p99") / 1e3
    drain = schedule_s / (schedule_s + drain_s) if schedule_s and math.isfinite(drain_s) else 1.0
    reasons = [
        f"{name} {key} {observed:.1f} > {bound:g} ms"
        for name, observed, bound in (
            ("TTFT", ttft, bounds["ttft_ms"]),
            ("TPOT", tpot, bounds["tpot_ms"]),
        )
        if not observed <= bound
    ]
    if not completed >= (1.0 - KEEP_UP_SLACK) * drain * scheduled:
        reasons.append(f"behind: {completed:.1f} of {scheduled:.1f} requests/s")
    failed = int(document["requests"]["failed"])
    if failed:
        reasons.append(f"{failed} requests failed in the engine")
    stability = document["stability"]
    more = [int(m) for line in verdict["early_stopping"] for m in _MORE_QUERIES.findall(line)]
    needs = [(queries + max(more)) / scheduled] if more and scheduled > 0 else []
    if stability["verdict"] == "INSUFFICIENT" and scheduled > 0:
        needs.append(MIN_SERVER_SAMPLES * WINDOWS / scheduled)
    interval = (document["figures"].get(f"ttft_{key}") or {}) or None
    return Probe(
        qps=qps,
        passed=not reasons,
        latency_ms=ttft,
        completed_qps=completed,
        scheduled_qps=scheduled,
        validity=str(verdict["validity"]),
        stability=str(stability["verdict"]),
        run_id=run_id or str(document.get("run_id", "")),
        reason="; ".join(reasons) or "within the bounds",
        validity_reasons=list(verdict["reasons"]),
        stability_reasons=list(stability.get("reasons", [])),
        failed_samples=failed,
        duration_needed_s=max(needs) if needs else None,
        latency_interval=dict(interval) if interval else None,
    )


@dataclass(frozen=True)
class NextRun:
    """The next run: its options and the group record its document carries."""

    options: GenerativeOptions
    group: dict[str, Any]
    warning: str | None = None


def next_run(
    base: GenerativeOptions,
    search: GenerativeSearch,
    documents: Sequence[Mapping[str, Any]],
    *,
    group_id: str = "",
) -> NextRun | PeakResult:
    """The run after ``documents`` (this search's, in the order run, each with its
    ``group``), or the result. ``base``: the Server run the search was asked for (its
    bounds, engine, prompts; its duration is the Offline estimate's)."""
    bounds = checked_bounds(base, search)
    settings = search.settings(bounds)
    roles = [(d.get("group") or {}).get("role") for d in documents]
    estimate = next((d for d, r in zip(documents, roles, strict=True) if r == ESTIMATE), None)
    start = search.start_qps
    group = {"kind": KIND, "id": group_id}
    if start is None and estimate is None:
        dropped = dict.fromkeys(("target_qps", "bounds", "ttft_ms", "tpot_ms", "percentile"))
        offline = _options(base, scenario="offline", **dropped)
        return NextRun(offline, group | {"role": ESTIMATE})
    if start is None:
        start = _figure(estimate or {}, "requests_per_s")
        if not start > 0:
            raise ValueError("find-peak: the Offline estimate completed no request; see its run")
    probes = [
        judge_probe(d, float(d["group"]["qps"]))
        for d, r in zip(documents, roles, strict=True)
        if r == PROBE
    ]
    found = step(settings, start, probes, sized=search.duration_s is None)
    if isinstance(found, PeakResult):
        return _told(found, bounds, documents)
    duration = found.duration_s or search.duration_s or base.min_duration_s
    longest = base.max_duration_s
    options = _options(
        base,
        target_qps=found.qps,
        min_duration_s=duration,
        max_duration_s=None if longest is not None and longest < duration else longest,
    )
    warning = found.longer
    if search.duration_s is not None and not probes:  # said once, before the first probe
        warning = duration_warning(search.duration_s, start, bounds.percentile)
    return NextRun(options, group | {"role": PROBE, "qps": found.qps}, warning)


def _options(options: GenerativeOptions, **update: Any) -> GenerativeOptions:
    return GenerativeOptions(**(options.model_dump() | update))


def _told(
    result: PeakResult, bounds: TokenBounds, documents: Sequence[Mapping[str, Any]]
) -> PeakResult:
    """The core's words for a search where no probe met the bound, said of both bounds."""
    if result.within_bound is not None or not result.curve:
        return result
    key = f"p{bounds.percentile:g}"
    lowest = min(result.curve, key=lambda p: p.qps)
    reason = (
        f"none of the {len(result.curve)} probes met TTFT {key} <= {bounds.ttft_ms:g} ms "
        f"and TPOT {key} <= {bounds.tpot_ms:g} ms; the lowest rate, {lowest.qps:.1f} "
        f"requests/s: {lowest.reason}"
    )
    advice = [a for a in result.advice if a.startswith("fix the backend")]
    advice.append(f"a lower --start-qps, below {lowest.qps:.3g} (the lowest rate probed)")
    ran = next((d for d in documents if str(d.get("run_id")) == lowest.run_id), None)
    for name, option in (("TTFT", "--ttft-ms"), ("TPOT", "--tpot-ms")):
        if f"{name} {key}" in lowest.reason and ran is not None:
            observed = _figure(ran, f"{name.lower()}_{key}")
            advice.append(
                f"a looser {option}, above {observed:.1f} ({name} {key} at "
                f"{lowest.qps:.1f} requests/s)"
            )
    return replace(result, reason=reason, advice=advice)


def find_peak(
    base: GenerativeOptions,
    search: GenerativeSearch,
    measure: Measure,
    warn: Callable[[str], None] = lambda _: None,
    starting: Callable[[NextRun], None] = lambda _: None,
) -> tuple[PeakResult, list[dict[str, Any]]]:
    """Run the search in this process: the result and every run's document, in order.
    ``warn`` is told what the search warns of, ``starting`` each run before it runs."""
    group_id = str(uuid.uuid4())
    documents: list[dict[str, Any]] = []
    while not isinstance(found := next_run(base, search, documents, group_id=group_id), PeakResult):
        if found.warning:
            warn(found.warning)
        starting(found)
        run_id = str(uuid.uuid4())
        documents.append(measure(found.options) | {"run_id": run_id, "group": found.group})
    return found, documents
