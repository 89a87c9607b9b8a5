"""One comparison from a fan-out: a row per agent, with what it ran on and how it did.

Each figure comes from the run when there is one (the environment captured at
measurement time, the settings the agent applied) and from the agent's advertisement
while the run is still pending, so a row is never blank, and never mixes the two.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.analysis.systems import machine_of
from services.core.shown_figures import shown_figures
from services.core.stored_report import (
    LoadGenReport,
    OutcomeReport,
    StoredReport,
    load_loadgen_report,
    load_report,
)
from services.core.workload import Workload, entry
from services.workloads import workload_named
from shared.db.evaluations import Agent, Evaluation
from shared.db.models import Run
from shared.db.states import FINAL_STATES, EvaluationState

_PIN = "agent="


@dataclass(frozen=True)
class FanOutRow:
    evaluation_id: str
    state: str
    reason: str
    agent_id: str
    hostname: str
    # The machine its figures belong to: the agent's declared one, else "host/queue"
    # (services/analysis/advice.machine_of), stable across the agent's restarts.
    machine: str
    cpu_model: str
    arch: str
    logical_cores: int | None
    memory_gib: float | None
    gpus: list[str]
    gpu_driver: str
    framework: str
    framework_version: str
    device: str
    # The agent's intra-op threads; 0: chosen per run for its scenario and the free CPUs.
    threads: int
    run_id: str | None = None
    samples_per_second: float | None = None
    latency_p50_ms: float | None = None
    latency_p90_ms: float | None = None
    latency_p99_ms: float | None = None
    validity: str = ""
    stability: str = ""
    # How the run shared its machine: another measurement overlapped it on the same host,
    # or other processes kept the CPUs busy (None until there is a run).
    overlapped: bool | None = None
    host_busy: bool | None = None
    # 95 % intervals over the run's stability windows (core/confidence.py; latency on
    # the SUT's clock); null with ``interval_reason`` saying why there is none.
    samples_per_second_low: float | None = None
    samples_per_second_high: float | None = None
    latency_p99_low_ms: float | None = None
    latency_p99_high_ms: float | None = None
    interval_reason: str = ""
    # What was measured: "loadgen", or "training", whose samples/s are images/s (batch /
    # mean step time), its interval images/s +/- t x its standard error, and which states
    # the settings it trained with ("image_size=224", ...) and has no latencies.
    workload: str = "loadgen"
    training_settings: list[str] = field(default_factory=list)
    jitter_images_per_second: float | None = None
    mean_step_ms: float | None = None
    # Any other workload's own (Workload.fan_out_figures): the settings it states
    # ("engine=openai", ...) and its figures as text with their 95 % intervals.
    workload_settings: list[str] = field(default_factory=list)
    workload_figures: list[str] = field(default_factory=list)


def _intervals(report: LoadGenReport) -> dict[str, Any]:
    """The row's interval fields from a stored report's ``confidence``."""
    figures = (report.confidence or {}).get("figures") or {}
    if not figures:
        return {"interval_reason": "no intervals recorded (run stored before them)"}
    sps, p99 = figures.get("samples_per_second") or {}, figures.get("latency_p99") or {}
    reasons = dict.fromkeys(str(f.get("reason")) for f in (sps, p99) if f.get("reason"))
    return {
        "samples_per_second_low": sps.get("low"),
        "samples_per_second_high": sps.get("high"),
        "latency_p99_low_ms": p99.get("low"),
        "latency_p99_high_ms": p99.get("high"),
        "interval_reason": "; ".join(reasons),
    }


@dataclass(frozen=True)
class FanOutComparison:
    group_id: str
    model: str
    scenario: str
    rows: list[FanOutRow] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return all(EvaluationState(r.state) in FINAL_STATES for r in self.rows)


def pinned_agent(evaluation: Evaluation) -> str:
    """The agent a fan-out pinned this evaluation to (its ``agent=ID`` term)."""
    for term in (evaluation.constraints or {}).get("require", []):
        if isinstance(term, str) and term.startswith(_PIN):
            return term[len(_PIN) :]
    return ""


@dataclass(frozen=True)
class _Hardware:
    cpu_model: str = ""
    arch: str = ""
    logical_cores: int | None = None
    memory_gib: float | None = None
    gpus: list[str] = field(default_factory=list)
    gpu_driver: str = ""

    @classmethod
    def from_environment(cls, environment: dict[str, Any]) -> _Hardware:
        """From a run's environment or an agent's advertised hardware (same keys)."""
        cpu: dict[str, Any] = environment.get("cpu") or {}
        gpus: list[dict[str, Any]] = environment.get("gpus") or []
        memory = environment.get("memory_bytes")
        cores = cpu.get("logical_cores")
        return cls(
            cpu_model=str(cpu.get("model") or ""),
            arch=str(cpu.get("architecture") or ""),
            logical_cores=int(cores) if cores else None,
            memory_gib=round(memory / 2**30, 1) if memory else None,
            gpus=[str(g.get("name", "")) for g in gpus],
            gpu_driver=str(gpus[0].get("driver", "")) if gpus else "",
        )


def build_row(evaluation: Evaluation, run: Run | None, agent: Agent | None) -> FanOutRow:
    report = load_report(run.report if run is not None else None)
    loadgen = report if isinstance(report, LoadGenReport) else LoadGenReport()
    metrics = {m.name: m.value for m in run.metrics} if run is not None else {}
    # Measured facts once there is a run; until then, what the agent advertised.
    if run is not None:
        hardware = _Hardware.from_environment(run.environment or {})
        # The threads the run applied (chosen for the scenario when the agent said 0).
        options = loadgen.settings.backend_options if loadgen.settings else None
        settings = asdict(options) if options else {}
        version = run.framework_version
    else:
        hardware = _Hardware.from_environment(agent.hardware if agent else {})
        settings = (agent.settings if agent else None) or {}
        version = agent.framework_version if agent else ""
    hostname = (run.environment or {}).get("hostname") if run is not None else None
    agent_id = evaluation.agent_id or pinned_agent(evaluation)
    recorded = loadgen.agent.get("settings") or (agent.settings if agent else {})
    return FanOutRow(
        evaluation_id=evaluation.id,
        state=evaluation.state,
        reason=evaluation.reason,
        agent_id=agent_id,
        hostname=str(hostname or (agent.hostname if agent else "")),
        machine=machine_of(agent_id, recorded) if agent_id else "",
        cpu_model=hardware.cpu_model,
        arch=hardware.arch,
        logical_cores=hardware.logical_cores,
        memory_gib=hardware.memory_gib,
        gpus=hardware.gpus,
        gpu_driver=hardware.gpu_driver,
        framework=evaluation.framework,
        framework_version=version,
        device=evaluation.device,
        threads=int(settings.get("intra_op_threads") or 0),
        run_id=run.id if run is not None else None,
        samples_per_second=run.samples_per_second if run is not None else None,
        # As the one rule shows them: none for an Offline run (queue positions).
        latency_p50_ms=_shown(report, metrics, "latency_p50"),
        latency_p90_ms=_shown(report, metrics, "latency_p90"),
        latency_p99_ms=_shown(report, metrics, "latency_p99"),
        validity=run.validity if run is not None else "",
        stability=(loadgen.stability_verdict or "UNKNOWN") if run else "",
        overlapped=bool(report.host.get("overlapped")) if run else None,
        host_busy=bool(report.host.get("busy")) if run else None,
        workload=evaluation.workload or "loadgen",
        **(_figures_of(report) if run is not None else {}),
    )


def _shown(report: StoredReport, metrics: dict[str, float], name: str) -> float | None:
    """A stored metric where services/core/shown_figures.py shows that figure, else None."""
    shown = {figure.name for figure in shown_figures(report)}
    return metrics.get(name) if name in shown else None


def _figures_of(report: StoredReport) -> dict[str, Any]:
    """The row's figures as the report's workload reads them (Workload.fan_out_figures)."""
    if not isinstance(report, OutcomeReport):
        return _intervals(load_loadgen_report(report))
    reader = _workload_of(report.kind).fan_out_figures
    return (
        _intervals(load_loadgen_report(report))
        if reader is None
        else dict(entry(reader)(report.document))
    )


def _workload_of(name: object) -> Workload:
    """The workload a report or an evaluation names; the default one for a name no longer
    registered (a row stored by a kind since removed reads as LoadGen's, as before)."""
    try:
        return workload_named(str(name) if name else None)
    except ValueError:
        return workload_named(None)


def load_comparison(session: Session, *, owner_id: int, group_id: str) -> FanOutComparison | None:
    """The owner's fan-out ``group_id``; None when it does not exist or is someone else's."""
    evaluations = list(
        session.scalars(
            select(Evaluation)
            .where(Evaluation.group_id == group_id, Evaluation.owner_id == owner_id)
            .order_by(Evaluation.created_at, Evaluation.id)
        )
    )
    if not evaluations:
        return None
    ids = [e.id for e in evaluations]
    found = session.scalars(select(Run).where(Run.evaluation_id.in_(ids)))
    runs = {r.evaluation_id: r for r in found}
    agent_ids = {e.agent_id or pinned_agent(e) for e in evaluations}
    agents = {a.id: a for a in session.scalars(select(Agent).where(Agent.id.in_(agent_ids)))}
    rows = [
        build_row(e, runs.get(e.id), agents.get(e.agent_id or pinned_agent(e))) for e in evaluations
    ]
    first = evaluations[0]
    # A workload LoadGen does not judge ran no scenario (its evaluations keep a default
    # one): the comparison names the workload instead.
    workload = _workload_of(first.workload)
    return FanOutComparison(
        group_id=group_id,
        model=f"{first.model_name}:{first.model_version}",
        scenario=(
            str(first.scenario.get("scenario", "")) if workload.judged_by_loadgen else workload.name
        ),
        rows=rows,
    )
