"""Rerun: a stored run run again, as one group, and its figures compared against noise
(``benchstack rerun`` and ``submitRerun``). The launchers rebuild the request; this
module holds the record, the bounds, the noise band and the verdicts.

The noise band of a figure is the larger of
- ``NOISE_FLOOR`` (5 %): run-to-run variation of an Offline run on an idle machine is
  ~1-3 % (benchmarks/run_to_run.py measures it), so a smaller band would call noise a change;
- twice the combined within-run variation: the coefficient of variation of the measurement
  windows of both runs (throughput for samples/s, median latency for latencies; Offline
  uses throughput for every figure);
- with repeated reruns, twice their coefficient of variation for that figure.

A figure's verdict (the rule, ``RULE``, is printed with every comparison):
- "better" / "worse" when its change lies outside its band;
- "inconclusive" when the change lies inside a band wider than ``SMALLEST_CHANGE_OF_INTEREST``
  (5 %): such a band could hide a change a user would care about, so "no change" is not shown;
- "within noise" otherwise: any change larger than 5 % would have shown.
Overall: "outside noise" if any figure is outside its band, else "inconclusive" if any figure
is, else "within noise".
"""

from __future__ import annotations

import math
import statistics
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Any, Final, Literal

from services.core.campaigns.group import Done, InvalidCampaign, Member, Start, all_at_once
from services.core.campaigns.repeats import MAX_REPEATS, spread_of
from services.core.environment_diff import diff_environments
from services.core.figures import FIGURES, figures_of, verdicts
from services.core.stored_report import LoadGenReport, load_loadgen_report

KIND: Final = "rerun"
NOISE_FLOOR = 0.05
# The smallest change of a figure that a user acts on: a 5 % slower release or a 5 % faster
# batch size is worth a decision; smaller ones are below what an idle machine repeats
# (NOISE_FLOOR). A band wider than this cannot tell "no change" from such a change.
SMALLEST_CHANGE_OF_INTEREST = 0.05
RULE = (
    f"a change outside its noise band is better/worse; inside a band wider than "
    f"{SMALLEST_CHANGE_OF_INTEREST:.0%} it is inconclusive (the band could hide a "
    f"{SMALLEST_CHANGE_OF_INTEREST:.0%} change); otherwise within noise"
)


@dataclass(frozen=True)
class FigureDelta:
    name: str
    unit: str
    original: float
    rerun: float
    change: float  # relative, (rerun - original) / original
    band: float  # relative half-width
    within: bool  # the change lies inside the band
    better: bool  # the change goes the good way (more throughput, less latency)
    verdict: str  # "better", "worse", "inconclusive" or "within noise"; see RULE
    explanation: str  # why an inconclusive figure is one; empty otherwise


def figure_verdict(change: float, band: float, *, better: bool) -> tuple[str, str]:
    """(verdict, explanation) of one figure's relative change against its relative band."""
    if abs(change) > band:
        return ("better" if better else "worse"), ""
    if band > SMALLEST_CHANGE_OF_INTEREST:
        return (
            "inconclusive",
            f"noise band ±{band:.1%} is wider than the {SMALLEST_CHANGE_OF_INTEREST:.0%} "
            "a user would care about",
        )
    return "within noise", ""


def overall_verdict(deltas: Sequence[FigureDelta]) -> str:
    """Any figure outside its band decides; an inconclusive one forbids "within noise"."""
    verdicts = {d.verdict for d in deltas}
    if verdicts & {"better", "worse"}:
        return "outside noise"
    if "inconclusive" in verdicts or not deltas:
        return "inconclusive"
    return "within noise"


def _delta(
    name: str,
    unit: str,
    original: float,
    rerun: float,
    change: float,
    *,
    band: float,
    better: bool,
) -> FigureDelta:
    verdict, explanation = figure_verdict(change, band, better=better)
    return FigureDelta(
        name=name,
        unit=unit,
        original=original,
        rerun=rerun,
        change=change,
        band=band,
        within=abs(change) <= band,
        better=better,
        verdict=verdict,
        explanation=explanation,
    )


@dataclass
class RerunVerdict:
    original_run: str
    rerun_runs: list[str]
    verdict: str  # "outside noise", "inconclusive" or "within noise"; see overall_verdict
    figures: list[FigureDelta]
    original_verdicts: tuple[str, str]  # (validity, stability)
    rerun_verdicts: list[tuple[str, str]]
    environment_diff: list[str]
    notes: list[str] = field(default_factory=list)
    rule: str = RULE

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _window_cv(report: LoadGenReport, key: str) -> float:
    windows = report.stability.windows if report.stability else []
    # The first window holds the ramp-up; the verdict ignores it and so does the band.
    found = (getattr(w, key) for w in windows[1:])
    values = [v for v in found if v is not None]
    if len(values) < 2 or not statistics.fmean(values):
        return 0.0
    return statistics.stdev(values) / statistics.fmean(values)


def noise_bands(
    stored: Mapping[str, Any] | LoadGenReport,
    stored_reruns: Sequence[Mapping[str, Any] | LoadGenReport],
) -> dict[str, float]:
    original = load_loadgen_report(stored)
    reruns = [load_loadgen_report(r) for r in stored_reruns]
    bands: dict[str, float] = {}
    spreads = spread_of(reruns) if len(reruns) > 1 else {}
    for name in FIGURES:
        # Offline latency is each sample's place in one queue, growing across the windows by
        # design; it varies with throughput, so throughput's variation bands it too.
        offline = original.perf.scenario == "Offline"
        judged_on_throughput = name == "samples_per_second" or offline
        key = "samples_per_second" if judged_on_throughput else "median_latency_ms"
        within = math.hypot(_window_cv(original, key), *(_window_cv(r, key) for r in reruns[:1]))
        band = max(NOISE_FLOOR, 2 * within)
        spread = spreads.get(name)
        if spread is not None and not math.isnan(spread.cv):
            band = max(band, 2 * spread.cv)
        bands[name] = band
    return bands


def compare(
    stored: Mapping[str, Any] | LoadGenReport,
    stored_reruns: Sequence[Mapping[str, Any] | LoadGenReport],
    *,
    original_environment: dict[str, Any] | None = None,
) -> RerunVerdict:
    """The rerun's figures (their median, with several) against the original's."""
    if not stored_reruns:
        raise ValueError("reruns: compare needs at least one rerun report")
    original = load_loadgen_report(stored)
    reruns = [load_loadgen_report(r) for r in stored_reruns]
    if original.accuracy is not None:
        deltas = _accuracy_deltas(original, reruns)
    else:
        deltas = _performance_deltas(original, reruns)
    env_before = original_environment or original.environment
    env_after = reruns[0].environment
    notes = []
    original_verdicts = verdicts(original)
    rerun_verdicts = [verdicts(r) for r in reruns]
    if original.accuracy is None:
        if "INVALID" in {original_verdicts[0], *(v[0] for v in rerun_verdicts)}:
            notes.append("an INVALID run is compared: its figures are not LoadGen-valid")
        if any(v[1] != "STABLE" for v in [original_verdicts, *rerun_verdicts]):
            notes.append("a run is not STABLE: differences may be the run, not the system")
    return RerunVerdict(
        original_run=original.run_id,
        rerun_runs=[r.run_id for r in reruns],
        verdict=overall_verdict(deltas),
        figures=deltas,
        original_verdicts=original_verdicts,
        rerun_verdicts=rerun_verdicts,
        environment_diff=diff_environments(env_before, env_after),
        notes=notes,
    )


def _accuracy_deltas(original: LoadGenReport, reruns: Sequence[LoadGenReport]) -> list[FigureDelta]:
    """Accuracy has no noise: the same weights on the same files give the same top-1."""
    deltas = []
    for name in ("top1", "top5"):
        old = _accuracy_figure(original, name)
        found = [_accuracy_figure(r, name) for r in reruns]
        values = [float(v) for v in found if v is not None]
        if old is None or len(values) != len(found):
            continue
        new = statistics.median(values)
        change = (new - old) / old if old else new - old
        delta = _delta(name, "%", old, new, change, band=0.0, better=new >= old)
        if change == 0 and any(v != old for v in values):
            # The median matches but a rerun does not: accuracy that varies is itself news.
            delta = replace(
                delta,
                within=False,
                verdict="inconclusive",
                explanation=f"reruns disagree: {', '.join(f'{v:g}' for v in values)}",
            )
        deltas.append(delta)
    return deltas


def _accuracy_figure(report: LoadGenReport, name: str) -> float | None:
    """top1 or top5; None where the run has none (a stored null, an older run)."""
    value: float | None = getattr(report.accuracy, name, None)
    return None if value is None or math.isnan(value) else value


def _performance_deltas(
    original: LoadGenReport, reruns: Sequence[LoadGenReport]
) -> list[FigureDelta]:
    bands = noise_bands(original, reruns)
    before = figures_of(original)
    after_runs = [figures_of(r) for r in reruns]
    deltas = []
    # Offline's figure is samples/s alone (as in MLPerf): its latencies depend on how many
    # samples LoadGen planned from warm-up, which differs between runs by design.
    offline = original.perf.scenario == "Offline"
    for name, (unit, larger_is_better) in FIGURES.items():
        if offline and name != "samples_per_second":
            continue
        old = before[name]
        new = statistics.median(f[name] for f in after_runs)
        if math.isnan(old) or math.isnan(new) or old == 0:
            continue
        change = (new - old) / old
        better = (change > 0) == larger_is_better
        deltas.append(_delta(name, unit, old, new, change, band=bands[name], better=better))
    return deltas


class RerunMember(Member):
    kind: Literal["rerun"] = KIND
    # The stored run it repeats.
    of: str
    index: int
    count: int


def plan(of: str, count: int, *, field: str = "repeats") -> list[RerunMember]:
    """``count`` reruns of run ``of``; ``field``: what the launcher calls the count."""
    if not 1 <= count <= MAX_REPEATS:
        raise InvalidCampaign(field, f"{count}; accepted: 1..{MAX_REPEATS}")
    group_id = str(uuid.uuid4())
    return [RerunMember(id=group_id, of=of, index=i, count=count) for i in range(count)]


def next_step(
    members: Sequence[RerunMember],
    finished: Sequence[dict[str, Any]],
    *,
    original: Mapping[str, Any],
    original_environment: dict[str, Any] | None = None,
) -> list[Start] | Done[RerunVerdict]:
    """Every rerun at once; the comparison with ``original`` (its stored report) once all
    are stored."""
    summarise = partial(compare, original, original_environment=original_environment)
    return all_at_once(members, finished, summarise)
