"""The spread table `bench --repeats` prints: each figure's min, median, max and CV over the
repeats, its interval, and every run's verdicts."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table

from services.cli.render import figure
from services.core.stored_report import LoadGenReport, load_loadgen_report


def _figure(value: float, unit: str) -> str:
    return figure(value, ".3f" if unit == "ms" else ".2f")


def spread_table(
    stored: Sequence[Mapping[str, Any] | LoadGenReport],
    spreads: dict[str, Any],
    confidence: dict[str, Any] | None = None,
) -> Table:
    """min / median / max / CV per figure over repeats, with every run's verdicts, and the
    95 % interval of each figure's mean over the runs (or why there is none)."""
    from services.core.figures import FIGURES

    reports = [load_loadgen_report(r) for r in stored]
    table = Table(title=f"{len(reports)} repeats", title_justify="left")
    for column in ("figure", "min", "median", "max", "CV", "95 % interval of the mean"):
        # Figures keep one line at a narrow console; names and reasons wrap around them.
        words = column in ("figure", "95 % interval of the mean")
        table.add_column(
            column, justify="left" if words else "right", no_wrap=not words, overflow="fold"
        )
    figures = (confidence or {}).get("figures") or {}
    for name, spread in spreads.items():
        unit = FIGURES[name][0]
        item = figures.get(name) or {}
        if item.get("low") is not None and item.get("high") is not None:
            interval = f"{_figure(item['low'], unit)} - {_figure(item['high'], unit)}"
        else:
            interval = f"[yellow]none[/]: {escape(str(item.get('reason') or 'not computed'))}"
        table.add_row(
            f"{name} ({unit})",
            _figure(spread.min, unit),
            _figure(spread.median, unit),
            _figure(spread.max, unit),
            "-" if math.isnan(spread.cv) else f"{spread.cv:.2%}",
            interval,
        )
    valid = sum(r.validity == "VALID" for r in reports)
    stable = sum(r.stability_verdict == "STABLE" for r in reports)
    table.caption = (
        f"validity: {valid}/{len(reports)} VALID; stability: {stable}/{len(reports)} STABLE; "
        f"runs {', '.join(r.run_id[:8] for r in reports)}"
    )
    return table
