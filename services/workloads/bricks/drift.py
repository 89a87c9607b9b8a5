"""Drift between measurement rounds, and whether a DLBricks verdict may be given.

Bricks and whole models are measured in rounds, the two sides interleaved step by step
within each round. A speedup or a constructed / measured ratio compares the two sides;
on a shared machine the host may change under them (a user once measured every model
x2.03 as slow after the bricks as before). Two drifts are measured over the rounds:

- the comparison's: per round, the bricks' summed medians over the models' (and, where
  given, the bricks' seconds over the models'), slowest round over fastest. This is what
  a verdict rests on, and it is void when it moved more than ``DRIFT_LIMIT``;
- the host's: each side's summed medians, slowest round over fastest. Printed, not
  judged: a host whose speed moves 10-15 % from one round to the next moves both sides
  of every round alike (this VM: the comparison within 2.5 % while each side moved
  13 %), and then the ratios hold while every millisecond figure carries that spread.

With one round there is nothing to compare: no verdict either.

A host whose speed moves for a while and then settles voids most runs of three rounds.
``newest_window`` lets a caller go on measuring rounds, up to a bound it sets, until the
newest ``size`` rounds agree: the verdict then rests on rounds that were measured one
after another and agree, and the rounds left out are reported with the drift over every
round, never hidden.
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
    # The comparison's drift: per round, bricks over models, slowest round over fastest - 1;
    # of the summed medians, and of the seconds each side took (None: not given).
    comparison: float | None
    seconds_comparison: float | None
    # The host's drift per side: (slowest round / fastest round) - 1 of the summed medians.
    models: float | None
    bricks: float | None
    # Each round's summed medians (ms), in the order measured: a trend (the host slowing
    # down) reads differently from scatter (a noisy neighbour), and a user should see which.
    model_totals: tuple[float, ...] = ()
    brick_totals: tuple[float, ...] = ()

    @property
    def value(self) -> float | None:
        """The comparison's drift, the larger of its two: the one a verdict must be within."""
        known = [d for d in (self.comparison, self.seconds_comparison) if d is not None]
        return max(known) if known else None

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
            f"{self.rounds} rounds: bricks/models per round {_pct(self.comparison)} in "
            f"summed medians, {_pct(self.seconds_comparison)} in seconds (slowest round over "
            f"fastest; the verdict's); the host, each side alike or not: whole models "
            f"{_pct(self.models)}, bricks {_pct(self.bricks)}; summed medians per round: whole "
            f"models {_totals(self.model_totals)} ms, bricks {_totals(self.brick_totals)} ms"
        )


def _totals(values: tuple[float, ...]) -> str:
    return ", ".join(f"{v:.1f}" for v in values) or "-"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}".replace("%", " %")


def drift_of(
    model_rounds: Sequence[Round],
    brick_rounds: Sequence[Round],
    seconds: Sequence[tuple[float, float]] = (),
) -> Drift:
    """Drift over rounds of medians; every round must name the same models (and bricks).
    ``seconds``: per round, (the models' seconds, the bricks' seconds), or nothing."""
    if len(model_rounds) != len(brick_rounds):
        raise ValueError(
            f"rounds: {len(model_rounds)} of models and {len(brick_rounds)} of bricks; "
            "accepted: the same number"
        )
    rounds = len(model_rounds)
    if seconds and len(seconds) != rounds:
        raise ValueError(f"seconds: {len(seconds)} rounds of {rounds}; accepted: one per round")
    if rounds < MIN_ROUNDS:
        return Drift(rounds, None, None, None, None)
    models = [_total(r, model_rounds[0]) for r in model_rounds]
    bricks = [_total(r, brick_rounds[0]) for r in brick_rounds]
    return Drift(
        rounds,
        _change([b / m for b, m in zip(bricks, models, strict=True)]),
        _change([b / m for m, b in seconds]) if seconds else None,
        _change(models),
        _change(bricks),
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
    model_rounds: Sequence[Round],
    brick_rounds: Sequence[Round],
    size: int,
    seconds: Sequence[tuple[float, float]] = (),
) -> Window:
    """The drift of the newest ``size`` rounds (every round, when fewer were measured)."""
    if size < 1:
        raise ValueError(f"window: {size} rounds; accepted: 1 or more")
    measured = len(model_rounds)
    start = max(0, measured - size)
    drift = drift_of(model_rounds[start:], brick_rounds[start:], seconds[start:])
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


def _change(values: list[float]) -> float:
    if not min(values) > 0:
        raise ValueError(f"rounds: a round's figure is {min(values)}; accepted: above 0")
    return max(values) / min(values) - 1


def median_over_rounds(rounds: Sequence[Round]) -> dict[str, float]:
    """Each name's median over the rounds' medians."""
    if not rounds:
        return {}
    return {name: float(statistics.median(r[name] for r in rounds)) for name in rounds[0]}
