"""Stack advice: for each system that measured a model, the highest Server QPS under a
latency bound, from stored find-peak probes, and what an inference costs there.

A system is one machine (an agent's host and queue, whatever its process id, or the local
host for embedded runs) with one framework
(name, version, device) and one set of run settings (batch size, workers, threads, backend
options). Its QPS under a bound is the highest stored find-peak probe that

- ran with the same percentile and a LoadGen bound at or below the one asked for (LoadGen's
  validity and early stopping then vouch for the asked bound too; a probe measured against
  a looser bound is not used: LoadGen never judged it against this one);
- passes ``core.find_peak_search.judge`` against the asked bound (within it, kept up, no
  failures), and
- is judged: LoadGen VALID and a stability verdict other than INSUFFICIENT.

Cost per million inferences = price_per_hour / (QPS * 3600) * 1e6, where the machine
declared a price (``BENCHSTACK_AGENT_PRICE_PER_HOUR``, recorded with every run it measures).
The cheapest system is named among those that meet the bound and have a price; systems that
meet it without a price are named as unpriced, so the choice is not mistaken for complete.
Systems with runs of the model but no usable find-peak result are listed with the command
that would measure them.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from services.analysis.priced_rates import priced_reader, rate_systems
from services.analysis.systems import label_of, system_of
from services.core.campaigns.find_peak import is_probe
from services.core.figures import percentile_key
from services.core.find_peak_search import Probe, judge
from services.core.shown_figures import host_verdict
from services.core.stored_report import (
    LoadGenReport,
    OutcomeReport,
    load_loadgen_report,
    load_report,
)

# At most this many stored runs of the model are read (newest first).
MAX_RUNS = 5000
# A bound stored as a float may differ from the one typed in its last bits.
_BOUND_SLACK = 1e-9


@dataclass(frozen=True)
class SystemAdvice:
    system: str  # one line naming the machine, framework and settings
    machine: str  # "host/queue" of the agent ids (machine_of), or "local:<hostname>"
    framework: str
    settings: dict[str, Any]
    # "meets the bound", "no valid peak", "no find-peak result"
    status: str
    qps: float | None = None
    latency_ms: float | None = None  # at the percentile, for the peak probe
    run_id: str | None = None
    group_id: str | None = None
    validity: str = ""
    stability: str = ""
    # The peak run's host verdict (services/core/shown_figures.py): BUSY and how busy.
    busy: bool | None = None
    busy_note: str = ""
    price_per_hour: float | None = None
    cost_per_million: float | None = None
    notes: list[str] = field(default_factory=list)
    command: str = ""  # what would measure it, when it lacks a figure
    # What cost_per_million prices: inferences, or a workload's own unit (output tokens)
    # at its rate (services/analysis/priced_rates.py).
    cost_unit: str = "inferences"
    rate_per_second: float | None = None


@dataclass(frozen=True)
class Advice:
    model: str
    latency_bound_ms: float
    percentile: float
    systems: list[SystemAdvice]
    cheapest: str | None  # the system line of the cheapest system meeting the bound
    conclusion: str
    missing: list[str] = field(default_factory=list)  # what is missing or not VALID

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def cost_per_million(price_per_hour: float, qps: float) -> float:
    """Price of a million inferences at ``qps`` on a machine costing ``price_per_hour``."""
    if not price_per_hour > 0 or not math.isfinite(price_per_hour):
        raise ValueError(f"price_per_hour: {price_per_hour} must be a positive price")
    if not qps > 0 or not math.isfinite(qps):
        raise ValueError(f"qps: {qps} must be a positive rate")
    return price_per_hour / (qps * 3600.0) * 1e6


def check_request(latency_bound_ms: float, percentile: float) -> None:
    if not (latency_bound_ms > 0 and math.isfinite(latency_bound_ms)):
        raise ValueError(f"--latency-bound-ms: {latency_bound_ms} must be a positive number")
    if latency_bound_ms > 3_600_000:
        raise ValueError(f"--latency-bound-ms: {latency_bound_ms:g} is over an hour")
    percentile_key(percentile)


def _price(reports: list[LoadGenReport], declared: float | None) -> float | None:
    """The price the machine declares now, else the newest one recorded with its runs."""
    if declared is not None:
        return declared
    for report in reports:  # newest first
        price = (report.agent.get("settings") or {}).get("price_per_hour")
        if isinstance(price, int | float) and price > 0:
            return float(price)
    return None


def _command(model: str, framework: str, settings: dict[str, Any], bound: float, pct: float) -> str:
    words = ["benchstack", "find-peak", model, "-f", framework.split(" ")[0]]
    words += ["--device", settings["device"], "-b", str(settings["batch_size"])]
    words += ["--workers", str(settings["workers"])]
    if settings["threads"]:
        words += ["--threads", str(settings["threads"])]
    for key, value in settings["options"].items():
        words += ["-o", f"{key}={value}"]
    words += ["--latency-bound-ms", f"{bound:g}", "--percentile", f"{pct:g}"]
    return shlex.join(words)


def _probe_bound(report: LoadGenReport) -> tuple[float | None, float | None]:
    scenario = report.settings.scenario if report.settings else {}
    bound, pct = scenario.get("target_latency_ms"), scenario.get("latency_percentile")
    return (
        None if bound is None else float(bound),
        None if pct is None else float(pct),
    )


def advise(
    reports: Iterable[Mapping[str, Any] | LoadGenReport],
    *,
    model: str,
    latency_bound_ms: float,
    percentile: float = 99.0,
    prices: dict[str, float] | None = None,
) -> Advice:
    """Advice from stored reports of one model's runs, newest first (see the docstring).
    ``prices``: machine (``machine_of`` an agent id) -> the price it declares now, over
    recorded ones."""
    check_request(latency_bound_ms, percentile)
    systems: dict[tuple[str, str, str], list[LoadGenReport]] = {}
    names: dict[tuple[str, str, str], tuple[str, str, dict[str, Any]]] = {}
    rated: list[OutcomeReport] = []
    for stored in map(load_report, reports):
        if priced_reader(stored) is not None:
            rated.append(cast(OutcomeReport, stored))
            continue
        report = load_loadgen_report(stored)
        if (report.mode or "performance") != "performance" or report.performance is None:
            continue
        machine, framework, settings = system_of(report)
        key = (machine, framework, repr(sorted(settings.items())))
        systems.setdefault(key, []).append(report)
        names[key] = (machine, framework, settings)
    found = [
        _system(
            runs,
            *names[key],
            model=model,
            bound=latency_bound_ms,
            pct=percentile,
            declared=(prices or {}).get(names[key][0]),
        )
        for key, runs in systems.items()
    ]
    found += [_priced(fields) for fields in rate_systems(rated, prices)]
    found.sort(key=lambda s: (s.status != "meets the bound", -(s.qps or 0.0), s.system))
    return _conclude(model, latency_bound_ms, percentile, found)


def _priced(fields: dict[str, Any]) -> SystemAdvice:
    """A system priced by its workload's own rate (priced_rates.py), its cost added."""
    price, rate = fields.get("price_per_hour"), fields.get("rate_per_second")
    cost = cost_per_million(price, rate) if price is not None and rate else None
    return SystemAdvice(**fields, cost_per_million=cost)


def _system(
    runs: list[LoadGenReport],
    machine: str,
    framework: str,
    settings: dict[str, Any],
    *,
    model: str,
    bound: float,
    pct: float,
    declared: float | None,
) -> SystemAdvice:
    label = label_of(machine, framework, settings)
    typed_model = str((runs[0].settings.model if runs[0].settings else "") or model)
    command = _command(typed_model, framework, settings, bound, pct)
    price = _price(runs, declared)
    probes = [r for r in runs if is_probe(r.group or {})]
    common: dict[str, Any] = {
        "system": label,
        "machine": machine,
        "framework": framework,
        "settings": settings,
        "price_per_hour": price,
    }
    if not probes:
        return SystemAdvice(
            **common,
            status="no find-peak result",
            notes=[f"{len(runs)} runs of the model, none a find-peak probe"],
            command=command,
        )
    usable, other_bounds = _judged_at(probes, bound, pct)
    passing = [p for p in usable if p.passed]
    best = max((p for p in passing if p.judged), key=lambda p: p.qps, default=None)
    notes = []
    if other_bounds:
        notes.append(
            f"{len(probes) - len(usable)} probes measured against {', '.join(sorted(other_bounds))}"
            f", not against p{pct:g} <= {bound:g} ms: LoadGen did not judge them for this bound"
        )
    if best is None:
        why = _why_no_peak(usable, passing)
        return SystemAdvice(**common, status="no valid peak", notes=[why, *notes], command=command)
    unjudged_above = [p for p in passing if not p.judged and p.qps > best.qps]
    if unjudged_above:
        notes.append(
            f"{len(unjudged_above)} faster probes met the bound but were not judged "
            f"(up to {max(p.qps for p in unjudged_above):.1f} QPS)"
        )
    peak_run = next(r for r in probes if r.run_id == best.run_id)
    host = host_verdict(peak_run.host)
    return SystemAdvice(
        **common,
        status="meets the bound",
        qps=best.qps,
        latency_ms=best.latency_ms,
        run_id=best.run_id,
        group_id=str((peak_run.group or {}).get("id") or ""),
        validity=best.validity,
        stability=best.stability,
        busy=host.busy,
        busy_note=host.note,
        cost_per_million=cost_per_million(price, best.qps) if price is not None else None,
        notes=notes,
    )


def _judged_at(
    probes: list[LoadGenReport], bound: float, pct: float
) -> tuple[list[Probe], set[str]]:
    """The probes measured against this bound or a tighter one, judged against it; and
    the other bounds the rest were measured against (LoadGen never judged them here)."""
    usable: list[Probe] = []
    other_bounds: set[str] = set()
    for report in probes:
        stored_bound, stored_pct = _probe_bound(report)
        if stored_pct != pct or stored_bound is None or stored_bound > bound + _BOUND_SLACK:
            other_bounds.add(f"p{stored_pct or 0:g} <= {stored_bound or 0:g} ms")
            continue
        qps = float((report.group or {}).get("qps") or 0.0)
        usable.append(judge(report, qps, latency_bound_ms=bound, percentile=pct))
    return usable, other_bounds


def _why_no_peak(usable: list[Probe], passing: list[Probe]) -> str:
    if not usable:
        return "no find-peak probe at this bound"
    if not passing:
        lowest = min(usable, key=lambda p: p.qps)
        return f"no probe met the bound; the lowest, {lowest.qps:.1f} QPS: {lowest.reason}"
    top = max(passing, key=lambda p: p.qps)
    return (
        f"{len(passing)} probes met the bound, none judged (highest {top.qps:.1f} QPS: "
        f"{', '.join(top.shortfalls())})"
    )


def _conclude(model: str, bound: float, pct: float, systems: list[SystemAdvice]) -> Advice:
    meeting = [s for s in systems if s.status == "meets the bound"]
    # Costs compare only in one unit: that of the fastest system meeting the bound.
    unit = meeting[0].cost_unit if meeting else "inferences"
    priced = [s for s in meeting if s.cost_per_million is not None and s.cost_unit == unit]
    unpriced = [s for s in meeting if s.cost_per_million is None]
    cheapest = min(priced, key=lambda s: s.cost_per_million or math.inf, default=None)
    target = f"p{pct:g} <= {bound:g} ms"
    if not systems:
        conclusion = f"no stored runs of {model}: measure one with `benchstack find-peak`"
    elif cheapest is not None:
        conclusion = (
            f"cheapest meeting {target}: {cheapest.system}, {cheapest.qps or 0.0:.1f} QPS at "
            f"{cheapest.cost_per_million:.4g} per million {cheapest.cost_unit}"
        )
        if unpriced:
            conclusion += f" ({len(unpriced)} more meet the bound but declare no price)"
    elif meeting:
        fastest = max(meeting, key=lambda s: s.qps or 0.0)
        conclusion = (
            f"no system meeting {target} declares a price (BENCHSTACK_AGENT_PRICE_PER_HOUR); "
            f"the fastest: {fastest.system}, {fastest.qps or 0.0:.1f} QPS"
        )
    else:
        conclusion = f"no system has a valid find-peak result for {target}"
    missing = [
        f"{s.system}: {s.status}" + (f" ({s.notes[0]})" if s.notes else "")
        for s in systems
        if s.status != "meets the bound"
    ]
    missing += [f"{s.system}: no price_per_hour declared" for s in unpriced]
    return Advice(
        model=model,
        latency_bound_ms=bound,
        percentile=pct,
        systems=systems,
        cheapest=cheapest.system if cheapest else None,
        conclusion=conclusion,
        missing=missing,
    )


def load_reports(
    session: Any, model: str, *, owner_id: int | None = None, limit: int = MAX_RUNS
) -> list[dict[str, Any]]:
    """Stored reports of ``model``'s performance runs, newest first, at most ``limit``;
    with ``owner_id``, only the runs of that user's evaluations (the stack)."""
    from sqlalchemy import select

    from shared.db.evaluations import Evaluation
    from shared.db.models import Run

    query = select(Run.report).where(Run.model_name == model, Run.mode == "performance")
    if owner_id is not None:
        query = query.join(Evaluation, Evaluation.id == Run.evaluation_id).where(
            Evaluation.owner_id == owner_id
        )
    query = query.order_by(Run.created_at.desc()).limit(limit)
    return [dict(r) for r in session.scalars(query) if r]
