"""What to change after an INVALID run: the likely cause, named, with the setting to move.

LoadGen says which of its checks failed (min duration, min queries, early stopping, the
latency bound); services/core/metrics.py records that in ``Validity``. The check that failed is
often a consequence, not the cause: a Server run that cannot keep up also fails early
stopping, and "run longer" would only make it fail for longer. ``invalid_hints`` looks
for causes first and drops the consequences they explain:

1. failed samples: figures measured over failures are no figures (they complete at once,
   so LoadGen's timing checks say nothing either); only the failure and a busy machine
   are named.
2. a busy machine (shared/host_load.py): other processes took the CPUs the run needed.
3. more intra-op threads than free CPUs (services/inference/threads.py's rule).
4. Server fell behind its schedule: lower the rate; the latency bound and early stopping
   follow from it and are not named.
5. Server kept up but its latency percentile is over the bound.
6. LoadGen's own checks, each with the figure that fixes it: the --duration that holds
   the queries early stopping asks for, the --target-qps Offline should plan with, the
   --max-duration or --max-queries that cut the run short.

Pure: the caller passes what the run recorded, nothing is read from the machine.
"""

from __future__ import annotations

import math
import re

from services.core.figures import PERCENTILE_KEYS
from services.core.metrics import PerformanceReport
from services.core.scenario import MEASURED_THROUGHPUT_MARGIN, ScenarioConfig
from shared.host_load import HostLoad, occupied_cpus

# services/core/metrics.py words LoadGen's "Performance constraints satisfied : NO" this way.
LATENCY_REASON_PREFIX = "latency constraint not met"

# Server "kept up" (find-peak's rule): completed / scheduled of at least
# (1 - KEEP_UP_SLACK) * T / (T + bound), T the schedule's length; the second factor allows
# for the last arrivals still draining when the schedule ends. Without a known bound the
# drain is unknown, so only a shortfall over UNKNOWN_BOUND_SLACK is called behind: more
# than the drain of any run at least four times as long as its bound.
KEEP_UP_SLACK = 0.03
UNKNOWN_BOUND_SLACK = 0.20

# A suggested --duration holds this much more than the estimate, so the run clears it.
DURATION_MARGIN = 1.1

# LoadGen's early-stopping text (mlperf_log_detail.txt, "early_stopping_result").
_NEED_TOTAL = re.compile(r"at\s+least\s+(\d+)\s+(?:total\s+)?queries", re.IGNORECASE)
_NEED_MORE = re.compile(r"at\s+least\s+(\d+)\s+more\s+queries", re.IGNORECASE)

_CONCURRENT_SCENARIOS = frozenset({"Offline", "Server"})


def invalid_hints(
    *,
    report: PerformanceReport,
    settings: ScenarioConfig,
    failed_samples: int = 0,
    first_error: str | None = None,
    host_load: HostLoad | None = None,
    threads: int | None = None,
    workers: int = 1,
) -> list[str]:
    """Hints for an INVALID run, most likely cause first; [] for a valid one.

    ``threads``: the intra-op threads the backend really used (its describe(), not 0);
    ``workers``: the SUT's workers; ``host_load``: the run's window (shared/host_load.py).
    """
    if report.validity.is_valid and not failed_samples:
        return []
    hints: list[str] = []
    if failed_samples:
        error = f": {first_error}" if first_error else ""
        hints.append(
            f"{failed_samples} of {report.sample_count or '?'} samples failed in the backend"
            f"{error}; fix that first (see the run's errors): timings over failures mean nothing"
        )
    if host_load is not None and host_load.busy:
        detail = host_load.reason.removeprefix("busy: ")
        hints.append(f"the machine was busy: {detail}; rerun on an idle machine")
    if failed_samples:
        return hints
    oversubscribed = _oversubscription(report.scenario, host_load, threads, workers)
    if oversubscribed:
        hints.append(oversubscribed)
    behind = report.scenario == "Server" and _behind(report, settings)
    latency_failed = any(r.startswith(LATENCY_REASON_PREFIX) for r in report.validity.reasons)
    if behind:
        hints.append(_behind_hint(report, settings))
    elif latency_failed:
        hints.append(_latency_hint(report, settings))
    if not report.validity.min_duration_met:
        hints.append(_min_duration_hint(report, settings))
    if not report.validity.min_queries_met:
        hints.append(_min_queries_hint(report, settings))
    if report.validity.early_stopping_met is False and not (behind or latency_failed):
        hints.append(_early_stopping_hint(report, settings))
    if not hints:
        # LoadGen's verdict with no cause we know: its own words are the best lead.
        hints.extend(r for r in report.validity.reasons if r.startswith("LoadGen: "))
        hints = hints or [
            "LoadGen reported INVALID without a reason we recognise; see its detail log"
        ]
    return hints


def _oversubscription(
    scenario: str, host_load: HostLoad | None, threads: int | None, workers: int
) -> str | None:
    if threads is None or threads < 1 or host_load is None or host_load.other_cpus is None:
        return None
    at_once = workers if scenario in _CONCURRENT_SCENARIOS else 1
    free = max(1, host_load.usable_cpus - occupied_cpus(host_load.other_cpus))
    if threads * at_once <= free:
        return None
    fits = max(1, free // at_once)
    pools = f"{threads} intra-op threads" + (f" x {at_once} workers" if at_once > 1 else "")
    return (
        f"{pools} on {free} free CPU{'s' if free != 1 else ''} oversubscribe them, so each "
        f"operator waits for a descheduled thread; rerun with --threads {fits}"
    )


def _behind(report: PerformanceReport, settings: ScenarioConfig) -> bool:
    completed = report.samples_per_second
    scheduled = report.scheduled_samples_per_second
    if math.isnan(scheduled):
        scheduled = settings.target_qps or math.nan
    if not (scheduled > 0 and completed >= 0):
        return False
    bound_ms = settings.target_latency_ms
    if bound_ms is None:
        return completed < (1.0 - UNKNOWN_BOUND_SLACK) * scheduled
    schedule_s = report.sample_count / scheduled
    drain = schedule_s / (schedule_s + bound_ms / 1e3) if schedule_s > 0 else 1.0
    return completed < (1.0 - KEEP_UP_SLACK) * drain * scheduled


def _behind_hint(report: PerformanceReport, settings: ScenarioConfig) -> str:
    scheduled = report.scheduled_samples_per_second
    asked = f" (--target-qps {settings.target_qps:g})" if settings.target_qps else ""
    of = f" of the {scheduled:.1f} scheduled{asked}" if not math.isnan(scheduled) else asked
    return (
        f"Server: completed {report.samples_per_second:.1f} samples/s{of}: the system cannot "
        f"keep up, so latency and early stopping fail with it; lower --target-qps below "
        f"{report.samples_per_second:.1f} (find-peak finds the highest rate that holds the bound)"
    )


def _latency_hint(report: PerformanceReport, settings: ScenarioConfig) -> str:
    percentile = settings.latency_percentile or 99.0
    key = PERCENTILE_KEYS.get(float(percentile))
    value = report.latency.percentiles_ns.get(key, math.nan) if key else math.nan
    observed = f" p{percentile:g} {value / 1e6:.1f} ms" if not math.isnan(value) else ""
    bound_ms = settings.target_latency_ms
    bound = f"the {bound_ms:g} ms bound" if bound_ms else "LoadGen's default bound"
    if report.scenario == "Server":
        return (
            f"Server kept up but its{observed or ' latency percentile'} is over {bound}: "
            "lower --target-qps or --batch-size (a batch waits to fill), or raise "
            "--latency-bound-ms if the bound is yours to choose"
        )
    return (
        f"{report.scenario}:{observed or ' the latency percentile'} is over {bound}: "
        "lower --batch-size or raise --latency-bound-ms"
    )


def _min_duration_hint(report: PerformanceReport, settings: ScenarioConfig) -> str:
    need = settings.effective_min_duration_s
    ran = f"the run lasted {report.duration_s:.2f} s of the {need:g} s required"
    if settings.max_query_count is not None and report.query_count >= settings.max_query_count:
        return f"{ran}: it stopped at --max-queries {settings.max_query_count}; raise or drop it"
    if report.scenario == "Offline":
        planned = (
            f"--target-qps {settings.target_qps:g}"
            if settings.target_qps
            else "the warm-up's estimate"
        )
        if not math.isfinite(report.samples_per_second):
            return f"Offline: {ran}; LoadGen measured no throughput to plan a rerun from"
        suggest = math.ceil(report.samples_per_second * MEASURED_THROUGHPUT_MARGIN)
        return (
            f"Offline: {ran}. LoadGen sized its one query from {planned}, but the system did "
            f"{report.samples_per_second:.1f} samples/s and finished early; "
            f"set --target-qps {suggest} (raising --duration alone does not help)"
        )
    return (
        f"{ran}: LoadGen planned fewer queries than the system completes in that time; "
        "see LoadGen's reason in the detail log"
    )


def _min_queries_hint(report: PerformanceReport, settings: ScenarioConfig) -> str:
    need = settings.min_query_count or (
        settings.quick_min_query_count if settings.profile == "quick" else None
    )
    needed = f"{need}" if need else "the profile's minimum"
    ran = f"only {report.query_count} queries ran where {needed} are required"
    per_query_s = _seconds_per_query(report)
    if need and per_query_s:
        span = f" (about {need * per_query_s * DURATION_MARGIN:.1f} s at this rate)"
    else:
        span = ""
    if settings.max_duration_s is not None:
        return (
            f"{ran}: --max-duration {settings.max_duration_s:g} s cut the run short; raise it"
            f"{span} or drop it, or lower --min-queries"
        )
    if settings.max_query_count is not None:
        return f"{ran}: --max-queries {settings.max_query_count} is below it; raise or drop it"
    return f"{ran}: raise --duration{span} or lower --min-queries"


def _early_stopping_hint(report: PerformanceReport, settings: ScenarioConfig) -> str:
    text = report.validity.early_stopping_result
    more = _NEED_MORE.search(text)
    total = _NEED_TOTAL.search(text)
    needed = report.query_count + int(more.group(1)) if more else None
    if needed is None and total:
        needed = int(total.group(1))
    per_query_s = _seconds_per_query(report)
    if needed and per_query_s:
        seconds = math.ceil(needed * per_query_s * DURATION_MARGIN)
        cap = settings.max_duration_s
        also = f" and --max-duration ({cap:g} s now)" if cap is not None and cap < seconds else ""
        return (
            f"early stopping needs at least {needed} queries for its percentile estimate and "
            f"the run had {report.query_count} ({per_query_s * 1e3:.1f} ms each): "
            f"raise --duration{also} to at least {seconds} s"
        )
    detail = f" (LoadGen: {' '.join(text.split())})" if text else ""
    return f"early stopping: too few queries for the percentile estimate; raise --duration{detail}"


def _seconds_per_query(report: PerformanceReport) -> float | None:
    """How long one query took in this run's rhythm: duration / queries where both are known."""
    if report.scenario == "Server" and report.scheduled_samples_per_second > 0:
        # Server's pace is its schedule, not the SUT's.
        return report.samples_per_query / report.scheduled_samples_per_second
    if report.query_count > 0 and report.duration_s > 0 and math.isfinite(report.duration_s):
        return report.duration_s / report.query_count
    return None
