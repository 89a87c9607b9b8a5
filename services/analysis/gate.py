"""The CI gate's judgement: is the current measurement slower than the baseline by more
than the allowed slowdown and the noise? (``benchstack gate``)

The comparison is rerun's (``services/core/campaigns/rerun.compare``): the same noise bands
(the 5 % floor, the runs' window spread, the repeats' spread) and verdicts. A baseline of
several runs (a repeats group) is represented by its run with the median figure, and its
band also covers twice the group's own spread, as rerun's covers the reruns'.

Exit codes (``PASS``, ``SLOWER``, ``CANNOT_SAY``):
- 0: no judged figure is slower beyond both the allowed slowdown and its noise band;
- 1: a figure is slower by more than the allowed slowdown and outside its band;
- 2: it cannot say: every run of a side was measured on a BUSY host, nothing could measure
  the noise (one run a side, too few measurement windows), or a band is wider than the
  allowed slowdown with the change inside it. Each reason comes with what would make the
  comparison judgeable.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from services.analysis.history import is_busy, run_settings, series_key, settings_changes
from services.core.campaigns.repeats import MAX_REPEATS, spread_of
from services.core.campaigns.rerun import SMALLEST_CHANGE_OF_INTEREST, compare, figure_verdict
from services.core.figures import FIGURES, figures_of
from services.core.stored_report import LoadGenReport, load_loadgen_report

PASS, SLOWER, CANNOT_SAY = 0, 1, 2
OUTCOMES = {PASS: "pass", SLOWER: "slower", CANNOT_SAY: "cannot say"}
# Windows beyond the first (the ramp-up) a run needs for its own spread to mean anything.
MIN_WINDOWS = 2
QUIET_HOST = "measure on a quiet host (no other jobs; a dedicated CI runner)"


def parse_fraction(text: str, field_name: str = "--max-slowdown") -> float:
    """ "5%" or "0.05" -> 0.05; ValueError for anything else or outside [0, 1)."""
    cleaned = text.strip()
    try:
        value = float(cleaned[:-1]) / 100 if cleaned.endswith("%") else float(cleaned)
    except ValueError:
        raise ValueError(f"{field_name}: {text!r} is not a fraction (5% or 0.05)") from None
    if not 0 <= value < 1:
        raise ValueError(f"{field_name}: {text!r}; accepted: 0% up to (not including) 100%")
    return value


@dataclass(frozen=True)
class GateFigure:
    name: str
    unit: str
    baseline: float
    current: float
    change: float  # relative, (current - baseline) / baseline
    slowdown: float  # relative, positive when the current is slower
    band: float  # relative half-width of the noise band
    verdict: str  # rerun's: better, worse, inconclusive, within noise
    outcome: str  # pass, slower, cannot say
    reason: str  # why, in words


@dataclass
class GateResult:
    exit_code: int
    model: str
    max_slowdown: float
    baseline_runs: list[str]
    current_runs: list[str]
    figures: list[GateFigure] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # why it cannot say
    remedies: list[str] = field(default_factory=list)  # what would make it judgeable
    environment_diff: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        return OUTCOMES[self.exit_code]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"outcome": self.outcome}


def _judged_windows(report: LoadGenReport) -> int:
    windows = report.stability.windows if report.stability else []
    return max(0, len(windows) - 1)


def _median_run(reports: Sequence[LoadGenReport], name: str) -> LoadGenReport:
    ranked = sorted(reports, key=lambda r: figures_of(r)[name])
    return ranked[(len(ranked) - 1) // 2]


def _figure(
    name: str, delta: Any, baseline: Sequence[LoadGenReport], max_slowdown: float
) -> GateFigure:
    unit, larger_is_better = FIGURES[name]
    band = delta.band
    if len(baseline) > 1:
        spread = spread_of(baseline)[name].cv
        band = max(band, 2 * spread) if not math.isnan(spread) else band
    verdict, _ = figure_verdict(delta.change, band, better=delta.better)
    slowdown = -delta.change if larger_is_better else delta.change
    allowed = max(max_slowdown, SMALLEST_CHANGE_OF_INTEREST)
    if slowdown > band and slowdown > max_slowdown:
        outcome = "slower"
        reason = (
            f"{slowdown:.1%} slower, beyond the allowed {max_slowdown:.1%} and ±{band:.1%} noise"
        )
    elif slowdown <= band and band > allowed:
        outcome = "cannot say"
        reason = f"noise band ±{band:.1%} is wider than the allowed {max_slowdown:.1%} slowdown"
    else:
        outcome = "pass"
        reason = (
            f"{slowdown:.1%} slower, within the allowed {max_slowdown:.1%}"
            if slowdown > band
            else f"change {delta.change:+.1%} within ±{band:.1%} noise"
        )
    return GateFigure(
        name,
        unit,
        delta.original,
        delta.rerun,
        delta.change,
        slowdown,
        band,
        verdict,
        outcome,
        reason,
    )


def default_figures(scenario: str) -> tuple[str, ...]:
    """What slows: Server's samples/s is the rate it was asked for, so its p99 latency is
    judged; elsewhere throughput (Offline's latencies are queue positions, rerun skips them)."""
    return ("latency_p99",) if scenario == "Server" else ("samples_per_second",)


def _quiet(result: GateResult, side: str, runs: Sequence[LoadGenReport]) -> list[LoadGenReport]:
    """The side's runs on a quiet host; where none is, the reason and its remedy."""
    quiet = [r for r in runs if not is_busy(r)]
    busy = [r.run_id[:8] for r in runs if is_busy(r)]
    if busy and quiet:
        result.notes.append(f"{side}: BUSY run(s) {', '.join(busy)} left out")
    elif busy or not runs:
        result.reasons.append(
            f"{side}: every run was measured on a BUSY host" if busy else f"{side}: no run"
        )
        result.remedies.append(QUIET_HOST)
    return quiet


def _compare_systems(result: GateResult, baseline: LoadGenReport, current: LoadGenReport) -> None:
    """Another scenario cannot be compared; another system or settings can, and are named
    (a slowdown's likely cause: one thread instead of two)."""
    before, after = series_key(baseline), series_key(current)
    if before.scenario != after.scenario:
        result.reasons.append(
            f"scenario: baseline {before.scenario}, current {after.scenario}: not comparable"
        )
        result.remedies.append("measure the current run with the baseline's request (no --current)")
    elif before != after:
        result.notes.append(f"current ran on {after.label}; baseline on {before.label}")
    changed = settings_changes(run_settings(baseline), run_settings(current))
    result.notes += [f"settings changed: {line}" for line in changed]


def _noise_problem(baseline: Sequence[LoadGenReport], current: Sequence[LoadGenReport]) -> str:
    """Why the noise cannot be measured, or "": repeats on a side measure it, else both
    single runs need windows enough for their own spread."""
    if len(baseline) > 1 or len(current) > 1:
        return ""
    short = [r.run_id[:8] for r in (*baseline, *current) if _judged_windows(r) < MIN_WINDOWS]
    if not short:
        return ""
    windows = MIN_WINDOWS + 1
    return f"too few repeats: one run a side, and {', '.join(short)} has < {windows} windows"


def judge(
    model: str,
    baseline_reports: Sequence[Mapping[str, Any] | LoadGenReport],
    current_reports: Sequence[Mapping[str, Any] | LoadGenReport],
    *,
    max_slowdown: float = 0.05,
    figures: Sequence[str] = (),
) -> GateResult:
    """The gate's verdict on ``current_reports`` against ``baseline_reports``; ``figures``:
    those judged (default: ``default_figures`` of the baseline's scenario)."""
    baseline_all = [load_loadgen_report(r) for r in baseline_reports]
    current_all = [load_loadgen_report(r) for r in current_reports]
    result = GateResult(
        CANNOT_SAY,
        model,
        max_slowdown,
        [r.run_id for r in baseline_all],
        [r.run_id for r in current_all],
    )
    baseline = _quiet(result, "baseline", baseline_all)
    current = _quiet(result, "current", current_all)
    if not result.reasons:
        _compare_systems(result, baseline_all[0], current_all[0])
    if result.reasons:
        return result
    noise = _noise_problem(baseline, current)
    if noise:
        result.reasons.append(noise)
        result.remedies.append("measure 3 repeats (--repeats 3) or a longer --duration")
        return result
    figures = figures or default_figures(series_key(baseline[0]).scenario)
    original = _median_run(baseline, figures[0])
    comparison = compare(original, current)
    result.environment_diff, result.notes = (
        comparison.environment_diff,
        result.notes + comparison.notes,
    )
    deltas = {d.name: d for d in comparison.figures}
    for name in figures:
        if name not in deltas:
            result.reasons.append(
                f"{name}: not compared (not measured, or Offline judges samples/s alone)"
            )
            continue
        result.figures.append(_figure(name, deltas[name], baseline, max_slowdown))
    _decide(result, len(current))
    return result


def _decide(result: GateResult, repeats: int) -> None:
    outcomes = {f.outcome for f in result.figures}
    if "slower" in outcomes:
        result.exit_code = SLOWER
    elif "cannot say" in outcomes or result.reasons or not result.figures:
        result.exit_code = CANNOT_SAY
        widest = max((f.band for f in result.figures if f.outcome == "cannot say"), default=0.0)
        if widest:
            # The band is the runs' own spread: a quieter host narrows it; more repeats
            # measure it better (a lucky pair of runs no longer decides).
            result.remedies.append(
                f"narrow the noise band (±{widest:.1%}) under the allowed slowdown: a quieter "
                f"host, pinned threads, or more repeats (--repeats {min(repeats + 2, MAX_REPEATS)})"
            )
        result.reasons += [
            f"{f.name}: {f.reason}" for f in result.figures if f.outcome == "cannot say"
        ]
    else:
        result.exit_code = PASS
