"""How `benchstack bricks construct` prints: the constructed latencies, each over the
measured one (with --measure), the notes on every model and the geometric means."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

LEGEND = (
    "seq: sum of the bricks; crit: critical path; floor: seq less each brick's share of the "
    "harness; cold: seq plus the weights read from memory; calib: seq plus the fitted "
    "per-brick cost"
)
CONSTRUCTIONS = (
    ("seq", "sequential_ms"),
    ("floor", "floor_corrected_ms"),
    ("cold", "cold_weights_ms"),
    ("calib", "calibrated_ms"),
)


def _table(title: str, columns: list[str], caption: str | None = None) -> Table:
    table = Table(title=title, caption=caption)
    for column in columns:
        # Folded, never cut with an ellipsis: a figure is read whole or not at all.
        table.add_column(column, justify="left" if column == "model" else "right", overflow="fold")
    return table


def print_constructions(
    built: list[Any], measured: dict[str, float], system: str, suite: Path
) -> None:
    """Two tables, each within 80 columns: the constructions, then (with --measure) each
    construction over the measured latency. Every model is named: with a missing figure
    or one at or below zero, and the summary says over which models it is taken."""
    from services.workloads.bricks.construct import FIGURES, summarise

    console = Console()
    latency = _table(
        f"Constructed latency (ms) on {system}",
        ["model", "bricks", "unique", "seq", "crit", "floor", "cold", "calib"],
        LEGEND,
    )
    versus = _table(
        "Constructed / measured", ["model", "measured ms", *(key for key, _ in CONSTRUCTIONS)]
    )
    ratios: dict[str, dict[str, float | None]] = {key: {} for key, _ in CONSTRUCTIONS}
    absent: dict[str, dict[str, str]] = {key: {} for key, _ in CONSTRUCTIONS}
    notes = []
    for c in built:
        if c.missing:
            notes.append(
                f"{c.model}: {len(c.missing)} of {c.unique_bricks} brick(s) not measured on "
                f"this system; run `benchstack bricks run {suite}`"
            )
        else:
            notes.append(
                f"{c.model}: all {c.unique_bricks} brick(s) already measured on this system; "
                "no new brick ran"
            )
            latency.add_row(
                c.model,
                str(c.steps),
                str(c.unique_bricks),
                _ms(c.sequential_ms),
                _ms(c.critical_path_ms),
                _ms(c.floor_corrected_ms),
                _ms(c.cold_weights_ms),
                _ms(c.calibrated_ms),
            )
        for figure in c.non_positive():
            notes.append(
                f"{c.model}: the {FIGURES[figure]} construction is "
                f"{getattr(c, figure):.3f} ms, not above zero: it does not fit this model "
                "and is left out of every mean"
            )
        if c.model not in measured:
            continue
        m = measured[c.model]
        row = [c.model, _ms(m)]
        for key, attribute in CONSTRUCTIONS:
            value = getattr(c, attribute)
            ratios[key][c.model] = value / m if value is not None else None
            absent[key][c.model] = c.why_absent(attribute) or "no figure"
            row.append(_ms(ratios[key][c.model]))
        versus.add_row(*row)
    for table in (latency, versus):
        if table.row_count:
            console.print(table)
    for note in notes:
        console.print(note, soft_wrap=True)  # commands and paths stay on one line
    if len(measured) > 1:
        console.print("Geometric mean of constructed / measured:")
        for key, _ in CONSTRUCTIONS:
            console.print(
                f"  {key}: {summarise(ratios[key], absent[key]).describe()}", soft_wrap=True
            )


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
