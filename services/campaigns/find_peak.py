"""Find-peak in one process: the search of services/core/campaigns/find_peak.py driven
with stored runs of one bench request, each probe run as soon as ``step`` asks for it."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from services.core.campaigns.find_peak import (
    ESTIMATE,
    NO_ESTIMATE,
    SERVER_TARGETS,
    FindPeakGroup,
    NextProbe,
    SearchSettings,
    probe_settings,
    start_rate,
    step,
)
from services.core.early_stopping import duration_warning
from services.core.find_peak_search import PeakResult, Probe, judge
from services.core.stored_report import load_loadgen_report
from services.embedded.request import BenchRequest

RunFn = Callable[[BenchRequest], dict[str, Any]]


def find_peak(
    request: BenchRequest,
    run: RunFn,
    search: SearchSettings,
    *,
    size_probes: bool = False,
    warn: Callable[[str], None] = lambda line: None,
) -> tuple[PeakResult, dict[str, Any] | None]:
    """Search with stored Server runs of ``request``; returns the result and, when no
    start rate is given, the Offline run whose throughput became the start rate (an
    upper bound on what Server can sustain with the same batch size and workers).

    ``size_probes``: each probe runs as long as LoadGen's early stopping and the stability
    rule need at its rate; else the request's duration, and ``warn`` is told when that is
    too short to judge a probe at the start rate (and when a probe runs again)."""
    problem = search.problem()
    if problem is not None:
        raise ValueError(f"--{problem[0].replace('_', '-')}: {problem[1]}")
    group = FindPeakGroup(str(uuid.uuid4()), ESTIMATE, search, stored_request(request))
    estimate = None
    start = start_rate(search, None)
    if start is None:
        offline = request.scenario.model_copy(
            update={"scenario": "offline"} | dict.fromkeys(SERVER_TARGETS)
        )
        estimate = run(replace(request, scenario=offline, group=group.to_dict(), run_id=None))
        start = start_rate(search, load_loadgen_report(estimate).perf.samples_per_second)
        if start is None:
            raise ValueError(f"find-peak: {NO_ESTIMATE}")
    if not size_probes:
        warning = duration_warning(
            request.scenario.effective_min_duration_s, start, search.percentile
        )
        if warning is not None:
            warn(warning)

    def run_probe(next_probe: NextProbe) -> Probe:
        update = {"scenario": "server"} | probe_settings(
            search, next_probe.qps, next_probe.duration_s
        )
        scenario = request.scenario.model_copy(update=update)
        member = group.probe(next_probe.qps).to_dict()
        report = run(replace(request, scenario=scenario, group=member, run_id=None))
        return judge(
            report,
            next_probe.qps,
            latency_bound_ms=search.latency_bound_ms,
            percentile=search.percentile,
        )

    probes: list[Probe] = []
    while not isinstance(found := step(search, start, probes, sized=size_probes), PeakResult):
        if found.longer is not None:
            warn(found.longer)
        probes.append(run_probe(found))
    return found, estimate


def stored_request(request: BenchRequest) -> dict[str, Any]:
    """``request`` as its group keeps it (FindPeakGroup.request): what the stack keeps of
    its own request, in the same names where the two share one."""
    options = request.backend_options
    return {
        "model": request.model,
        "framework": request.framework,
        "device": options.device,
        "scenario": request.scenario.scenario,
        "settings": request.scenario.model_dump(
            mode="json", exclude_none=True, exclude={"scenario"}
        ),
        "batch_size": request.batch_size,
        "dataset": request.dataset,
        "samples": request.samples,
        "seed": request.seed,
        "constraints": dict(request.constraints),
        "backend_options": dict(options.extra),
        "threads": options.intra_op_threads or None,
    }
