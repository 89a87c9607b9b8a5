"""Drift between measurement rounds, and whether a DLBricks verdict may be given.

Bricks and whole models are measured in rounds (each round: every brick, then every
model, or the reverse). A speedup or a constructed / measured ratio compares figures
taken minutes apart; on a shared machine the host may change under them (a user once
measured every model x2.03 as slow after the bricks as before). So each side's figures
are summed per round and the rounds compared: drift is how far the slowest round is
above the fastest, per side, and the verdict is void when either side drifted more than
``DRIFT_LIMIT``. With one round there is nothing to compare: no verdict either.

A host whose speed moves for a while and then settles (this VM: episodes of about 20 s
that slow every process 10-35 %, with no other process or stolen time to be seen) voids
most runs of three rounds. ``newest_window`` lets a caller go on measuring rounds, up to
a bound it sets, until the newest ``size`` rounds agree: the verdict then rests on
rounds that were measured one after another and agree, and the rounds left out are
reported with the drift over every round, never hidden.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

DRIFT_LIMIT = 0.05
MIN_ROUNDS = 2

# One round's medians, name -> ms.
Round = Mapping[str, float]


@dataclass(frozen=True)
class Drift:
    rounds: int
    models: float | None  # (slowest round / fastest round) - 1 of the models' summed medians
    bricks: float | None  # the same over the bricks
    # Per round, the bricks' sum over the models' sum: its spread (max - min) / median
    # says how far the comparison itself moved.
    ratio_spread: float | None
    # Each round's summed medians (ms), in the order measured: a trend (the host slowing
    # down) reads differently from scatter (a noisy neighbour), and a user should see which.
    model_totals: tuple[float, ...] = ()
    brick_totals: tuple[float, ...] = ()

    @property
    def value(self) -> float | None:
        """The larger side's drift: the one a verdict must be within."""
        sides = [d for d in (self.models, self.bricks) if d is not None]
        return max(sides) if sides else None

    def void_reason(self, limit: float = DRIFT_LIMIT) -> str | None:
        """Why no verdict may be given (``void: drift 7.1 % > 5 %``), or None."""
        if self.value is None:
            return f"void: drift not measured ({self.rounds} round(s); at least {MIN_ROUNDS})"
        if self.value > limit:
            return f"void: drift {self.value:.1%} > {limit:.0%}".replace("%", " %")
        return None

    def describe(self) -> str:
        if self.value is None:
            return f"{self.rounds} round(s): drift not measured"
        return (
            f"{self.rounds} rounds: whole models {_pct(self.models)}, bricks {_pct(self.bricks)}"
            f" (slowest round over fastest); bricks/models per round spread "
            f"{_pct(self.ratio_spread)}; summed medians per round: whole models "
            f"{_totals(self.model_totals)} ms, bricks {_totals(self.brick_totals)} ms"
        )


def _totals(values: tuple[float, ...]) -> str:
    return ", ".join(f"{v:.1f}" for v in values) or "-"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}".replace("%", " %")


def drift_of(model_rounds: Sequence[Round], brick_rounds: Sequence[Round]) -> Drift:
    """Drift over rounds of medians; every round must name the same models (and bricks)."""
    if len(model_rounds) != len(brick_rounds):
        raise ValueError(
            f"rounds: {len(model_rounds)} of models and {len(brick_rounds)} of bricks; "
            "accepted: the same number"
        )
    rounds = len(model_rounds)
    if rounds < MIN_ROUNDS:
        return Drift(rounds, None, None, None)
    models = [_total(r, model_rounds[0]) for r in model_rounds]
    bricks = [_total(r, brick_rounds[0]) for r in brick_rounds]
    ratios = [b / m for b, m in zip(bricks, models, strict=True)]
    return Drift(
        rounds,
        _change(models),
        _change(bricks),
        (max(ratios) - min(ratios)) / statistics.median(ratios),
        tuple(models),
        tuple(bricks),
    )


@dataclass(frozen=True)
class Window:
    """The newest ``size`` rounds of those measured, and their drift."""

    start: int  # index of the window's first round among every round measured
    size: int
    measured: int  # every round measured so far
    drift: Drift

    @property
    def left_out(self) -> int:
        return self.measured - self.size

    def describe(self) -> str:
        if not self.left_out:
            return f"every round ({self.measured}) used"
        return (
            f"rounds {self.start + 1}-{self.start + self.size} of {self.measured} used; "
            f"the {self.left_out} before them left out"
        )


def newest_window(
    model_rounds: Sequence[Round], brick_rounds: Sequence[Round], size: int
) -> Window:
    """The drift of the newest ``size`` rounds (every round, when fewer were measured)."""
    if size < 1:
        raise ValueError(f"window: {size} rounds; accepted: 1 or more")
    measured = len(model_rounds)
    start = max(0, measured - size)
    drift = drift_of(model_rounds[start:], brick_rounds[start:])
    return Window(start, measured - start, measured, drift)


def _total(one: Round, first: Round) -> float:
    if set(one) != set(first):
        raise ValueError(
            f"rounds: a round measured {sorted(one)[:3]}..., the first {sorted(first)[:3]}...;"
            " accepted: every round measures the same names"
        )
    total = sum(one.values())
    if not total > 0:
        raise ValueError(f"rounds: a round's medians sum to {total}; accepted: above 0")
    return total


def _change(totals: list[float]) -> float:
    return max(totals) / min(totals) - 1


def median_over_rounds(rounds: Sequence[Round]) -> dict[str, float]:
    """Each name's median over the rounds' medians."""
    if not rounds:
        return {}
    return {name: float(statistics.median(r[name] for r in rounds)) for name in rounds[0]}
