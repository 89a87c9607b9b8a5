"""Advice for the workloads priced by their own rate (``Workload.priced_rate``, e.g. the
generative workload's output tokens/s): a system is one machine with one workload and the
settings its rate states (engine, served model, endpoint); its figure is the fastest of
its judged runs (VALID against their own latency bounds), and its cost per million units
is price_per_hour / (rate x 3600) x 1e6, the price being the one the machine declares now,
else the newest recorded with its runs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from services.analysis.systems import machine_of
from services.core.stored_report import OutcomeReport, StoredReport
from services.core.workload import PricedRate, entry
from services.workloads import workloads

# The status of a system whose figure advice may quote (advice._conclude counts it).
MEETS = "meets the bound"


def priced_reader(report: StoredReport) -> str | None:
    """The ``priced_rate`` entry of the workload that stored ``report``; None: not one."""
    if not isinstance(report, OutcomeReport):
        return None
    workload = workloads().get(report.kind)
    return workload.priced_rate if workload is not None else None


def _machine(report: OutcomeReport) -> tuple[str, float | None]:
    """The run's machine and the price recorded with it (its document's ``agent``)."""
    agent = report.document.get("agent") or {}
    settings = agent.get("settings") or {}
    host = (report.document.get("environment") or {}).get("hostname") or "?"
    machine = machine_of(str(agent.get("id") or ""), settings) or f"local:{host}"
    price = settings.get("price_per_hour")
    return machine, float(price) if isinstance(price, int | float) and price > 0 else None


def rate_systems(
    reports: Iterable[OutcomeReport], prices: Mapping[str, float] | None = None
) -> list[dict[str, Any]]:
    """Per system of the reports (newest first), advice.SystemAdvice's fields but its
    cost, which advice prices from ``price_per_hour`` and ``rate_per_second``."""
    grouped: dict[tuple[str, str, str], list[tuple[PricedRate, float | None]]] = {}
    named: dict[tuple[str, str, str], tuple[str, dict[str, Any]]] = {}
    for report in reports:
        rate: PricedRate = entry(str(priced_reader(report)))(report.document)
        machine, price = _machine(report)
        key = (machine, report.kind, repr(sorted(rate.settings.items())))
        grouped.setdefault(key, []).append((rate, price))
        named[key] = (machine, rate.settings)
    found = []
    for key, runs in grouped.items():
        machine, settings = named[key]
        recorded = next((p for _, p in runs if p is not None), None)
        price = (prices or {}).get(machine, recorded)
        judged = [(r, r.per_second) for r, _ in runs if not r.unjudged and r.per_second]
        best, fastest = max(judged, key=lambda pair: pair[1] or 0.0, default=(None, None))
        common: dict[str, Any] = {
            "system": ", ".join([machine, key[1], *(f"{k}={v}" for k, v in settings.items())]),
            "machine": machine,
            "framework": key[1],
            "settings": settings,
            "price_per_hour": price,
            "cost_unit": runs[0][0].unit,
        }
        if best is None or fastest is None:
            why = "; ".join(dict.fromkeys(r.unjudged for r, _ in runs if r.unjudged))
            found.append(common | {"status": "no judged run", "notes": [why]})
            continue
        found.append(
            common
            | {
                "status": MEETS,
                "qps": best.requests_per_second,
                "rate_per_second": fastest,
                "validity": "VALID",
                "notes": [f"judged against its own latency bounds: {fastest:.4g} {best.unit}/s"],
            }
        )
    return found
